package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/multislice/multislice/test/framework"
)

// TestUpInterrupted: SIGTERM or SIGINT at each step of `multislice up`
// (as each step begins) makes it stop everything it started and exit
// non-zero within seconds; nothing of the half-built cluster is left running.
func TestUpInterrupted(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	steps := []string{"starting etcd", "starting kube-apiserver", "installing the JobSet CRD", "starting kube-controller-manager",
		"starting kwok", "starting multislice-manager", "creating the fleet", "starting cloud-repair", "starting sim-agents"}
	for i, step := range steps {
		sig := []syscall.Signal{syscall.SIGTERM, syscall.SIGINT}[i%2]
		home := t.TempDir()
		cmd := exec.Command(filepath.Join(framework.BinDir(t), "multislice"), "up")
		cmd.Env = append(os.Environ(), "MULTISLICE_HOME="+home, "MULTISLICE_BIN_DIR="+framework.BinDir(t))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(stdout)
		sent, began := false, time.Now()
		for lines.Scan() {
			if !sent && strings.HasPrefix(lines.Text(), step) {
				_ = cmd.Process.Signal(sig)
				sent, began = true, time.Now()
			}
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err = <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("%s at %q: up still runs after 30 s", sig, step)
		}
		if !sent {
			t.Errorf("up never printed %q", step)
		}
		if err == nil {
			t.Errorf("%s at %q: up exited 0, want an error", sig, step)
		}
		for _, p := range recordedPIDs(t, home) {
			if alive(p) {
				t.Errorf("%s at %q: pid %d of the half-built cluster still runs", sig, step, p)
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
		}
		t.Logf("%s at %q: exited %s after the signal: %s", sig, step, time.Since(began).Round(10*time.Millisecond), strings.TrimSpace(stderr.String()))
		if out, err := framework.RunIn(t, home, "down"); err != nil {
			t.Errorf("down after the interrupted up: %v\n%s", err, out)
		}
	}
}

func recordedPIDs(t *testing.T, home string) []int {
	data, err := os.ReadFile(filepath.Join(home, "state.json"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Processes []struct {
			PID int `json:"pid"`
		} `json:"processes"`
	}
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, p := range st.Processes {
		pids = append(pids, p.PID)
	}
	return pids
}

// alive: the process exists and is not a zombie.
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(data), ')')
	return i > 0 && len(data) > i+2 && data[i+2] != 'Z'
}

// TestUpRefusesBadInput: bad flags and fleet files are refused before
// anything starts, naming the field and the fix, with a non-zero exit.
func TestUpRefusesBadInput(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	dir := t.TempDir()
	fleet := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte("apiVersion: multislice.dev/v1alpha1\nkind: Fleet\n"+body), 0o644); err != nil {
			t.Fatal(err)
		}
		return "--fleet=" + path
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"up", "--apiserver-port=70000"}, "must be 1 to 65535"},
		{[]string{"up", "--feature-gates=Bogus=true"}, "with Name one of DynamicSlicing, ElasticJobSet"},
		{[]string{"up", "--timeout=banana"}, `invalid argument "banana" for "--timeout"`},
		{[]string{"up", fleet("huge.yaml", "pools:\n- {name: p, machineType: e2-standard-8, numNodes: 2000000000}\n")}, "raise limits.nodes in the fleet file on purpose"},
		{[]string{"up", fleet("tpu.yaml", "groups:\n- {name: g, accelerator: tpu-v9, topology: 2x2x2, slices: 1}\n")}, `unknown TPU accelerator "tpu-v9": use one of`},
		{[]string{"up", fleet("dup.yaml", "pools:\n- {name: p, machineType: e2-standard-8, numNodes: 1}\n- {name: p, machineType: e2-standard-8, numNodes: 1}\n")}, `pools[1].name: "p" is already declared by pools[0]`},
		{[]string{"up", "--fleet=" + filepath.Join(dir, "missing.yaml")}, "no such file"},
		{[]string{"upp"}, `unknown command "upp"`},
		{[]string{"workload", "creat", "x"}, `unknown command "creat" for "multislice workload"`},
	} {
		home := filepath.Join(dir, "home")
		out, err := framework.RunIn(t, home, tc.args...)
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("multislice %s: err=%v, output:\n%s\nwant a refusal containing %q", strings.Join(tc.args, " "), err, out, tc.want)
		}
		if _, err := os.Stat(filepath.Join(home, "state.json")); err == nil {
			t.Errorf("multislice %s started something", strings.Join(tc.args, " "))
		}
	}
}
