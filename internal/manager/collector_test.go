package manager

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/go-logr/logr"
)

// TestSetMemoryLimitFromTheCgroup runs a process in a memory cgroup of
// its own limited to 200 MiB (as a container is), and a second one with
// GOMEMLIMIT set: the first gets 90% of the cgroup's limit as the Go
// runtime's soft limit, the second keeps its own.
func TestSetMemoryLimitFromTheCgroup(t *testing.T) {
	dir, limitFile := memoryCgroup(t)
	const limit = 200 << 20
	if err := os.WriteFile(filepath.Join(dir, limitFile), []byte(strconv.Itoa(limit)), 0o644); err != nil {
		t.Skipf("cannot limit a cgroup's memory here: %v", err)
	}
	for _, tc := range []struct {
		env  string
		want int64
	}{
		{"", limit * 9 / 10},
		{"GOMEMLIMIT=64MiB", 64 << 20},
	} {
		// The shell moves itself into the cgroup, then becomes the helper.
		cmd := exec.Command("/bin/sh", "-c", `echo $$ > "$1/cgroup.procs" && exec "$2" -test.run='^TestHelperSetMemoryLimit$'`,
			"sh", dir, os.Args[0])
		cmd.Env = append(os.Environ(), "MULTISLICE_TEST_MEMLIMIT=1")
		if tc.env != "" {
			cmd.Env = append(cmd.Env, tc.env)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.env, err, out)
		}
		var got int64
		for _, line := range strings.Split(string(out), "\n") {
			if v, ok := strings.CutPrefix(line, "memory limit: "); ok {
				got, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		if got != tc.want {
			t.Errorf("%q: the runtime's memory limit is %d, want %d\n%s", tc.env, got, tc.want, out)
		}
	}
}

// TestHelperSetMemoryLimit is the process above: it runs only when asked to.
func TestHelperSetMemoryLimit(t *testing.T) {
	if os.Getenv("MULTISLICE_TEST_MEMLIMIT") != "1" {
		t.Skip("a helper process")
	}
	SetMemoryLimit(logr.Discard())
	fmt.Printf("memory limit: %d\n", debug.SetMemoryLimit(-1))
}

// TestSetGCPercent runs a process that calls SetGCPercent with and without
// GOGC in its environment and reads the collector's target back.
func TestSetGCPercent(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want string
	}{
		{"", "50"},
		{"GOGC=100", "100"},
		{"GOGC=off", "-1"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperSetGCPercent$")
		cmd.Env = []string{"MULTISLICE_TEST_GOGC=1"} // none of this shell's GOGC
		if tc.env != "" {
			cmd.Env = append(cmd.Env, tc.env)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.env, err, out)
		}
		if !strings.Contains(string(out), "gc percent: "+tc.want+"\n") {
			t.Errorf("%q: want the collector's target %s\n%s", tc.env, tc.want, out)
		}
	}
}

// TestHelperSetGCPercent is the process above: it runs only when asked to.
func TestHelperSetGCPercent(t *testing.T) {
	if os.Getenv("MULTISLICE_TEST_GOGC") != "1" {
		t.Skip("a helper process")
	}
	SetGCPercent()
	fmt.Printf("gc percent: %d\n", debug.SetGCPercent(100))
}

// memoryCgroup makes a memory cgroup for the test (v1 or v2), removed at
// its end, and names the file that limits it; it skips where it cannot.
func memoryCgroup(t *testing.T) (dir, limitFile string) {
	root, limitFile := "/sys/fs/cgroup/memory", "memory.limit_in_bytes"
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		root, limitFile = "/sys/fs/cgroup", "memory.max"
	}
	dir = filepath.Join(root, fmt.Sprintf("multislice-test-memlimit-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a memory cgroup here (needs root): %v", err)
	}
	t.Cleanup(func() {
		if err := os.Remove(dir); err != nil { // only once every process in it exited
			t.Errorf("remove the test's cgroup: %v", err)
		}
	})
	return dir, limitFile
}
