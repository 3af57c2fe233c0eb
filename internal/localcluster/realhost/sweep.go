package realhost

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Paths outside the cluster's directories; variables for tests.
var (
	cgroupFS      = "/sys/fs/cgroup"
	containerLogs = "/var/log/containers" // the kubelet's fixed symlink directory
	procFS        = "/proc"
)

// Sweep removes everything the cluster's real hosts left on this machine,
// whether they were stopped in order or killed: every process that runs
// for them (kubelets, containerds, shims, containers: anything in their
// cgroups or naming their directories), then mounts under their
// directories (container root filesystems, pod volumes, network
// namespaces, the kubelet's own root), then their cgroups, the kubelet's
// log links, the runtime directory and the hosts' directories. The
// bridge and sysctls are the caller's (they belong to the cluster).
func Sweep(l Layout) error {
	var errs []error
	for range 20 {
		if killAll(l) == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := killAll(l); n > 0 {
		errs = append(errs, fmt.Errorf("%d processes of the real hosts did not die after SIGKILL", n))
	}
	errs = append(errs, unmountUnder(l.HostsDir(), l.RunDir()))
	errs = append(errs, removeCgroups(l.CgroupParent()))
	errs = append(errs, removeLogLinks(l.HostsDir()))
	for _, dir := range []string{l.RunDir(), l.HostsDir()} {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// killAll sends SIGKILL to every process of the cluster's real hosts and
// returns how many it found.
func killAll(l Layout) int {
	pids := map[int]bool{}
	for _, pid := range cgroupPIDs(l.CgroupParent()) {
		pids[pid] = true
	}
	for _, pid := range pidsNaming(l.RunDir(), l.HostsDir()) {
		pids[pid] = true
	}
	delete(pids, os.Getpid())
	for pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return len(pids)
}

// cgroupPIDs lists the processes in a cgroup tree, read in the pids (or
// else the memory) hierarchy, where every container has its cgroup.
func cgroupPIDs(parent string) []int {
	var out []int
	for _, hier := range []string{"pids", "memory", "unified"} {
		root := filepath.Join(cgroupFS, hier, parent)
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			data, err := os.ReadFile(filepath.Join(path, "cgroup.procs"))
			if err != nil {
				return nil
			}
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil {
					out = append(out, pid)
				}
			}
			return nil
		})
	}
	return out
}

// pidsNaming lists processes whose command line names one of dirs: the
// kubelets, containerds and shims (`-address <run dir>/...`).
func pidsNaming(dirs ...string) []int {
	entries, err := os.ReadDir(procFS)
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join(procFS, e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, arg := range bytes.Split(cmdline, []byte{0}) {
			if namesAny(string(arg), dirs) {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// namesAny reports whether a command-line argument is, or contains as a
// path (after "=" in --flag=value), one of dirs or a path below it.
func namesAny(arg string, dirs []string) bool {
	if _, v, ok := strings.Cut(arg, "="); ok && strings.HasPrefix(arg, "-") {
		arg = v
	}
	for _, d := range dirs {
		if arg == d || strings.HasPrefix(arg, d+"/") {
			return true
		}
	}
	return false
}

// unmountUnder detaches every mount at or below dirs, deepest first, until
// none is left (mounts stack: the kubelet bind-mounts its own root).
func unmountUnder(dirs ...string) error {
	for range 10 {
		points, err := mountsUnder(dirs)
		if err != nil {
			return err
		}
		if len(points) == 0 {
			return nil
		}
		for _, p := range points {
			_ = syscall.Unmount(p, syscall.MNT_DETACH)
		}
	}
	points, _ := mountsUnder(dirs)
	if len(points) > 0 {
		return fmt.Errorf("mounts left under %s: %s (unmount them by hand: umount -l PATH)", strings.Join(dirs, ", "), strings.Join(points, ", "))
	}
	return nil
}

// mountsUnder lists mount points at or below dirs, deepest first.
func mountsUnder(dirs []string) ([]string, error) {
	f, err := os.Open(filepath.Join(procFS, "self", "mountinfo"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		point := unescapeMount(fields[4])
		if namesAny(point, dirs) {
			out = append(out, point)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return slices.Compact(out), sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 is a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// removeCgroups removes the cgroup tree parent in every hierarchy, deepest
// first (a cgroup is removed with rmdir once it has no processes).
func removeCgroups(parent string) error {
	hiers, err := os.ReadDir(cgroupFS)
	if err != nil {
		return nil // no cgroup file system: nothing was created
	}
	var errs []error
	for _, h := range hiers {
		root := filepath.Join(cgroupFS, h.Name(), parent)
		var dirs []string
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := syscall.Rmdir(dirs[i]); err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", dirs[i], err))
			}
		}
	}
	return errors.Join(errs...)
}

// removeLogLinks removes the kubelet's links in /var/log/containers that
// point into dir.
func removeLogLinks(dir string) error {
	entries, err := os.ReadDir(containerLogs)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		link := filepath.Join(containerLogs, e.Name())
		if target, err := os.Readlink(link); err == nil && namesAny(target, []string{dir}) {
			if err := os.Remove(link); err != nil {
				return err
			}
		}
	}
	return nil
}

// MakeCgroups creates the host's cgroup root in every v1 hierarchy (the
// kubelet refuses a cgroupRoot that does not exist), with the parent's
// CPUs and memory nodes in cpuset (a new cpuset has none).
func MakeCgroups(path string) error {
	hiers, err := os.ReadDir(cgroupFS)
	if err != nil {
		return fmt.Errorf("cgroups: %w", err)
	}
	for _, h := range hiers {
		if h.Name() == "unified" {
			continue
		}
		base := filepath.Join(cgroupFS, h.Name())
		dir := base
		for _, part := range strings.Split(strings.Trim(path, "/"), "/") {
			parent := dir
			dir = filepath.Join(dir, part)
			if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("create cgroup %s: %w", dir, err)
			}
			if h.Name() == "cpuset" {
				for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
					v, err := os.ReadFile(filepath.Join(parent, f))
					if err != nil {
						return err
					}
					if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
						return fmt.Errorf("cgroup %s: %w", filepath.Join(dir, f), err)
					}
				}
			}
		}
	}
	return nil
}

// KillContainer sends SIGKILL to every process of a container on one of
// the cluster's real hosts (its cgroup is named after the container's ID,
// below the hosts' cgroups), as a process crashing inside it would end,
// and returns their pids. The container's kubelet sees it exit.
func KillContainer(l Layout, containerID string) ([]int, error) {
	if containerID == "" {
		return nil, errors.New("the container has not started")
	}
	root := filepath.Join(cgroupFS, "pids", l.CgroupParent())
	var pids []int
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || filepath.Base(path) != containerID {
			return nil
		}
		data, _ := os.ReadFile(filepath.Join(path, "cgroup.procs"))
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return filepath.SkipDir
	})
	if len(pids) == 0 {
		return nil, fmt.Errorf("no process of container %.12s on this cluster's real hosts", containerID)
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return pids, nil
}
