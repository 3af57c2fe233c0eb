package localcluster

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/multislice/multislice/internal/localcluster/sim"
)

// started is a component launched by this process: exited is closed when it
// ends, so `up` can report a crash while it waits.
type started struct {
	Process
	log    string
	exited chan struct{}
	err    error
}

// start launches a component in its own session (so it outlives `up` and
// a terminal hang-up), with stdout and stderr appended to its log.
func start(name, binary, logPath string, args []string, ports []int) (*started, error) {
	return startEnv(name, binary, logPath, args, nil, ports)
}

// startEnv is start with env added to this process's environment.
func startEnv(name, binary, logPath string, args, env []string, ports []int) (*started, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "=== %s %s\n", time.Now().Format(time.RFC3339), strings.Join(append([]string{binary}, args...), " "))
	cmd := exec.Command(binary, args...)
	// Recorded as the kernel names it (/proc/PID/exe), which alive
	// compares: a relative path (MULTISLICE_MANAGER_BINARY=bin/…) never
	// matched, and `down` left that component running.
	if abs, err := filepath.Abs(cmd.Path); err == nil {
		cmd.Path, binary = abs, abs
	}
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	s := &started{
		Process: Process{Name: name, PID: cmd.Process.Pid, Binary: binary, Ports: ports, Args: args, Env: env},
		log:     logPath,
		exited:  make(chan struct{}),
	}
	go func() { s.err = cmd.Wait(); close(s.exited) }()
	return s, nil
}

// crashError explains that a component ended and points at its log.
func (s *started) crashError() error {
	return fmt.Errorf("%s exited (%v) before the cluster was ready; read its log: %s\n%s",
		s.Name, s.err, s.log, tail(s.log, 8))
}

// alive reports whether the recorded process still runs the same binary
// (a recycled pid running something else does not count).
func (p Process) alive() bool {
	if _, live := procStat(strconv.Itoa(p.PID)); !live {
		return false
	}
	exe, err := os.Readlink("/proc/" + strconv.Itoa(p.PID) + "/exe")
	if err != nil {
		return false
	}
	exe = strings.TrimSuffix(exe, " (deleted)")
	if exe == p.Binary {
		return true
	}
	// The kernel names the file itself: a binary reached through a symbolic
	// link (a bin directory of links) is the same program.
	real, err := filepath.EvalSymlinks(p.Binary)
	return err == nil && exe == real
}

// rssBytes is the resident memory of the process, 0 if unknown.
func (p Process) rssBytes() int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// stop ends the process group: SIGTERM, then SIGKILL after the grace period.
// It returns once the process has exited.
func (p Process) stop(grace time.Duration) {
	if !p.alive() {
		return
	}
	_ = syscall.Kill(-p.PID, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for !p.exited() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !p.exited() {
		_ = syscall.Kill(-p.PID, syscall.SIGKILL)
		for i := 0; !p.exited() && i < 100; i++ {
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// exited: the process is gone or a zombie. Once signalled, a process is
// waited for by this and not by alive: part way through its exit it has
// no /proc/PID/exe any more (so alive says false) while it still holds
// its files and ports, and runs on for a while on a busy machine.
func (p Process) exited() bool {
	_, live := procStat(strconv.Itoa(p.PID))
	return !live
}

// freePort returns an unused loopback port below the kernel's ephemeral
// range. A port from that range (what listening on :0 gives) can be taken
// as the source port of an outgoing connection, and the cluster's own
// clients make many, between our check and the component's bind; ports
// below it are only ever taken by an explicit bind. A port is handed out
// once per process, so one cluster never gets the same port twice.
func freePort() (int, error) {
	low, high := listenPorts()
	for range 500 {
		p := low + rand.IntN(high-low)
		if handOut(p) && portFree(p) {
			return p, nil
		}
	}
	return 0, fmt.Errorf("no free port on 127.0.0.1 between %d and %d", low, high)
}

// freePorts is n distinct free ports.
func freePorts(n int) ([]int, error) {
	ports := make([]int, n)
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	return ports, nil
}

// FreePort is freePort for tests and tools that start servers of their own
// beside a local cluster.
func FreePort() (int, error) { return freePort() }

var (
	handedMu sync.Mutex
	// The simulated kubelets' port is never handed out: the API server's
	// egress proxy takes a tunnel to it for one to a simulated node, so a
	// real host's kubelet given it had its pods' logs answered by the
	// simulator (once in CI).
	handed = map[int]bool{sim.KubeletPort: true}
	claims []net.Listener // held, never closed: see handOut
)

// handOut claims port p for this process: once within it, and on the
// host against other processes picking at the same time (parallel tests'
// `up`s), whose check would find p free until its component binds it. The
// host-wide claim is an abstract unix socket named after the port, held
// while this process lives, so it ends with the process, leaving nothing.
func handOut(p int) bool {
	handedMu.Lock()
	defer handedMu.Unlock()
	if handed[p] {
		return false
	}
	handed[p] = true
	claim, err := net.Listen("unix", portClaim(p))
	if errors.Is(err, syscall.EADDRINUSE) {
		return false // another process's
	}
	if err == nil {
		claims = append(claims, claim)
	}
	return true
}

// portClaim is the abstract unix socket that claims port p on the host.
func portClaim(p int) string { return "@multislice-port-" + strconv.Itoa(p) }

// listenPorts is the range freePort picks from: from 10000 to the start of
// the ephemeral range (/proc/sys/net/ipv4/ip_local_port_range, 32768 by default).
func listenPorts() (low, high int) {
	low, high = 10000, 32768
	if data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(data)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > low+1000 {
				high = n
			}
		}
	}
	return low, high
}

// portFree reports whether nothing listens on the loopback port.
func portFree(port int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// tail returns the last n lines of a file, indented, for error messages.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  | " + strings.Join(lines, "\n  | ")
}

// procStat reads /proc/<pid>/stat: the command name and whether the
// process lives (exists and is not a zombie).
func procStat(pid string) (comm string, live bool) {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return "", false
	}
	// pid (comm) state ...: the name may hold spaces and parentheses.
	open, close := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
	if open < 0 || close < open || len(data) < close+3 {
		return "", false
	}
	return string(data[open+1 : close]), data[close+2] != 'Z'
}
