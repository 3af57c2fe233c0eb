package kueue

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/kueue"
)

func TestNewCmdInitFillsOptions(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	var got *InitOptions
	cmd := NewCmdInit(&cli.Factory{HomeDir: t.TempDir()}, func(_ context.Context, o *InitOptions) error { got = o; return nil })
	cmd.SetArgs(nil)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Namespace != "default" || got.GroupLabel != gke.MultisliceGroupLabel {
		t.Errorf("options %+v", got)
	}
}

func TestConnectOptions(t *testing.T) {
	var got *ConnectOptions
	cmd := NewCmdConnect(&cli.Factory{}, func(_ context.Context, o *ConnectOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--worker-kubeconfig=/w", "--worker-name=east", "--wait=0"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.WorkerKubeconfig != "/w" || got.WorkerName != "east" || got.ClusterQueue != kueue.ClusterQueueName || got.Wait != 0 {
		t.Errorf("options %+v", got)
	}

	garbage := filepath.Join(t.TempDir(), "garbage")
	if err := os.WriteFile(garbage, []byte("not: [a kubeconfig"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		o    ConnectOptions
		want string
	}{
		{ConnectOptions{WorkerKubeconfig: "/nonexistent", Wait: 2 * time.Hour}, "--wait=2h0m0s: want 0 (do not wait) to 1h"},
		{ConnectOptions{WorkerKubeconfig: "/nonexistent", Wait: time.Minute}, "--worker-kubeconfig: open /nonexistent"},
		{ConnectOptions{WorkerKubeconfig: garbage, WorkerName: "w", ClusterQueue: "q"}, "kubeconfig"},
	} {
		if _, err := tc.o.Connection(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", tc.o, err, tc.want)
		}
	}
}
