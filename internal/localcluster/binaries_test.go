package localcluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuildMissing: in a checkout, up builds the part of the binaries its
// cluster lacks (real hosts' parts, Kueue, both, or the control plane)
// with the checkout's script, and nothing when none is missing; outside
// a checkout it builds nothing.
func TestBuildMissing(t *testing.T) {
	repo := t.TempDir()
	b := Binaries{Dir: filepath.Join(repo, "bin")}
	ran := filepath.Join(repo, "ran")
	if err := os.MkdirAll(filepath.Join(repo, "hack"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/usr/bin/env bash\necho \"==> building $1\"\necho \"$1\" >> " + ran + "\n"
	if err := os.WriteFile(filepath.Join(repo, "hack", "build-controlplane.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	have := func(paths ...string) {
		for _, p := range paths {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, nil, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	have(b.Etcd(), b.APIServer(), b.Scheduler(), b.ControllerManager(), b.Kwok())
	built := func(realHosts, kueue bool) string {
		t.Helper()
		_ = os.Remove(ran)
		var progress strings.Builder
		if err := b.BuildMissing(context.Background(), realHosts, kueue, &progress); err != nil {
			t.Fatal(err)
		}
		out, _ := os.ReadFile(ran)
		return strings.TrimSpace(string(out))
	}
	for _, tc := range []struct {
		realHosts, kueue bool
		want             string
	}{
		{false, false, ""}, {true, false, "real-hosts"}, {false, true, "kueue"}, {true, true, "all"},
	} {
		if got := built(tc.realHosts, tc.kueue); got != tc.want {
			t.Errorf("real hosts %v, kueue %v: built %q, want %q", tc.realHosts, tc.kueue, got, tc.want)
		}
	}
	have(b.Kueue())
	if got := built(false, true); got != "" {
		t.Errorf("Kueue there: built %q", got)
	}
	if err := os.Remove(b.Kwok()); err != nil {
		t.Fatal(err)
	}
	if got := built(false, false); got != "control-plane" {
		t.Errorf("kwok missing: built %q, want control-plane", got)
	}
	elsewhere := Binaries{Dir: filepath.Join(repo, "elsewhere")}
	if elsewhere.BuildScript() != "" {
		t.Errorf("a directory that is not a checkout's bin/ has a build script")
	}
}
