package localcluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// Heal restarts only the components that died, with their recorded
// binary and arguments, and records the new pid.
func TestHealRestartsTheDead(t *testing.T) {
	h := Home(t.TempDir())
	if err := os.MkdirAll(h.LogDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sleep, err := exec.LookPath("sleep")
	if err == nil {
		sleep, err = filepath.EvalSymlinks(sleep) // alive() compares the resolved executable
	}
	if err != nil {
		t.Skip("no sleep binary")
	}
	dead := exec.Command(sleep, "0")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	st := &State{Processes: []Process{
		{Name: "alive", PID: os.Getpid(), Binary: self},
		{Name: "sleeper", PID: dead.Process.Pid, Binary: sleep, Args: []string{"30"}},
	}}
	if err := h.writeState(st); err != nil {
		t.Fatal(err)
	}
	healed, err := Heal(h)
	if err != nil || len(healed) != 1 || healed[0] != "sleeper" {
		t.Fatalf("Heal = %v, %v; want [sleeper]", healed, err)
	}
	after, err := h.ReadState()
	if err != nil {
		t.Fatal(err)
	}
	p := after.Processes[1]
	t.Cleanup(func() { _ = syscall.Kill(p.PID, syscall.SIGKILL) })
	if p.PID == dead.Process.Pid || !p.alive() {
		t.Fatalf("sleeper not running again: pid %d (was %d)", p.PID, dead.Process.Pid)
	}
	if after.Processes[0].PID != os.Getpid() {
		t.Error("the live component was touched")
	}
	if again, err := Heal(h); err != nil || len(again) != 0 {
		t.Errorf("second Heal = %v, %v; want nothing to do", again, err)
	}
}

// freePort stays below the ephemeral range and never repeats itself.
func TestFreePortBelowEphemeralRange(t *testing.T) {
	low, high := listenPorts()
	seen := map[int]bool{}
	for range 50 {
		p, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		if p < low || p >= high || seen[p] {
			t.Fatalf("port %d: outside [%d, %d) or handed out twice", p, low, high)
		}
		seen[p] = true
	}
}

// A component whose binary was reached through a symbolic link (a bin
// directory of links) is still seen alive, and Down stops it: it used to
// be taken for gone and left running.
func TestDownStopsABinaryBehindASymlink(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	dir := t.TempDir()
	link := filepath.Join(dir, "sleep")
	if err := os.Symlink(sleep, link); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(link, "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait() }() // reap it, as init would
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	p := Process{Name: "sleeper", PID: cmd.Process.Pid, Binary: link}
	if !p.alive() {
		t.Fatal("a process started through a link is taken for gone")
	}
	h := Home(t.TempDir())
	if err := h.writeState(&State{Processes: []Process{p}}); err != nil {
		t.Fatal(err)
	}
	report, err := Down(h)
	if err != nil || len(report) != 1 || !report[0].WasRunning || p.alive() {
		t.Fatalf("Down = %+v, %v; alive after: %v", report, err, p.alive())
	}
}
