package localcluster

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/multislice/multislice/internal/localcluster/sim"
)

// A component started from a relative path is alive, and stops: `down`
// once left such a manager running (MULTISLICE_MANAGER_BINARY=bin/…).
func TestStartFromRelativePathStops(t *testing.T) {
	self, err := os.Readlink("/proc/self/exe") // this test binary, copied, is the component
	if err != nil {
		t.Skip("no /proc")
	}
	dir := t.TempDir()
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "component"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	s, err := startEnv("component", "./component", filepath.Join(dir, "log"), []string{"-test.run=^TestHelperStayUp$", "-test.v"},
		[]string{"MULTISLICE_TEST_STAY_UP=1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(s.PID, syscall.SIGKILL) }) // whatever alive says
	if !filepath.IsAbs(s.Binary) {
		t.Errorf("recorded binary %q, want an absolute path", s.Binary)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !s.Process.alive() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !s.Process.alive() {
		t.Fatal("the component started from ./component is not alive")
	}
	s.Process.stop(5 * time.Second)
	if !s.Process.exited() {
		t.Error("stop returned before the component exited")
	}
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the component still runs after stop")
	}
}

// TestHelperStayUp is the component above: it runs only when asked to.
func TestHelperStayUp(t *testing.T) {
	if os.Getenv("MULTISLICE_TEST_STAY_UP") != "1" {
		t.Skip("a helper process")
	}
	time.Sleep(time.Minute)
}

func TestUnixListening(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runtime.sock")
	ready := unixListening(path)
	if ok, err := ready(context.Background()); ok || err == nil {
		t.Fatalf("no socket yet: got %v, %v; want false and an error", ok, err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if ok, err := ready(context.Background()); !ok || err != nil {
		t.Fatalf("listening: got %v, %v; want true", ok, err)
	}
}

// The simulated kubelets' port is never handed out to a component.
func TestKubeletPortNeverHandedOut(t *testing.T) {
	if handOut(sim.KubeletPort) {
		t.Errorf("port %d, the simulated kubelets', was handed out", sim.KubeletPort)
	}
}

// A port another process claimed (here: its claim made by hand) is not
// handed out: parallel `up`s once gave two clusters the same port, and the
// second's component found it bound.
func TestPortClaimedElsewhereNotHandedOut(t *testing.T) {
	p, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	next := p + 1
	other, err := net.Listen("unix", portClaim(next))
	if err != nil {
		t.Skipf("no abstract unix sockets: %v", err)
	}
	defer other.Close()
	if handOut(next) {
		t.Errorf("port %d, claimed by another process, was handed out", next)
	}
	if handOut(p) {
		t.Errorf("port %d was handed out twice", p)
	}
}
