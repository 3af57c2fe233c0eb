package standin

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// A worker finds its resource manager, then exits as told.
func TestWorkerConnectsAndExitsAsTold(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rmPort := freePort(t)
	rmEnv := env(map[string]string{"REPLICATED_JOB_NAME": "pathways-head", "JOBSET_NAME": "pw", "HOST_ADDRESS": "pw-pathways-head-0-0.pw"})
	rmCtx, stopRM := context.WithCancel(ctx)
	defer stopRM()
	go func() {
		_ = Run(rmCtx, Options{Role: "resource-manager", ServerPort: rmPort, Host: "127.0.0.1", Getenv: rmEnv, Out: &bytes.Buffer{}})
	}()
	var out bytes.Buffer
	err := Run(ctx, Options{Role: "worker", ServerPort: freePort(t), ResourceManager: "127.0.0.1:" + strconv.Itoa(rmPort), Host: "127.0.0.1", Out: &out,
		Getenv: env(map[string]string{"MEGASCALE_NUM_SLICES": "2", "MEGASCALE_SLICE_ID": "1", "MEGASCALE_COORDINATOR_ADDRESS": "pw-pathways-head-0-0.pw",
			"PATHWAYS_HEAD": "pw-pathways-head-0-0.pw", ExitAfterEnv: "0s", ExitCodeEnv: "3"})})
	var code ExitError
	if !errors.As(err, &code) || code != 3 {
		t.Fatalf("exit %v, want code 3 as told", err)
	}
	if !strings.Contains(out.String(), "worker of slice 1/2 connected to the resource manager") {
		t.Errorf("output %q", out.String())
	}
}

// A role missing its environment says which variables.
func TestCheckNamesWhatIsMissing(t *testing.T) {
	err := Check(Options{Role: "worker", ServerPort: 29005, ResourceManager: "h:29001", Getenv: env(map[string]string{"PATHWAYS_HEAD": "h"})})
	if err == nil || !strings.Contains(err.Error(), "MEGASCALE_NUM_SLICES, MEGASCALE_SLICE_ID, MEGASCALE_COORDINATOR_ADDRESS") {
		t.Fatalf("err %v", err)
	}
	if err := Check(Options{Role: "driver", Getenv: env(nil)}); err == nil || !strings.Contains(err.Error(), "--role") {
		t.Fatalf("unknown role: %v", err)
	}
}
