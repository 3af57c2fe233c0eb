// Package standin plays Pathways' proxy, resource manager and workers where
// their images are not available (they are not public): each role checks
// the environment xpk's JobSet gives it, listens on its ports, a worker
// connects to the resource manager, and each runs until stopped or until
// told to exit. It is no Pathways: it shows that the JobSet's wiring
// (coordinator address, ports, sidecar order, env) is right.
package standin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// Roles and the environment each needs, as xpk's template sets it.
var Roles = map[string][]string{
	"proxy":            {"PATHWAYS_HEAD"},
	"resource-manager": {"REPLICATED_JOB_NAME", "JOBSET_NAME", "HOST_ADDRESS"},
	"worker":           {"MEGASCALE_NUM_SLICES", "MEGASCALE_SLICE_ID", "MEGASCALE_COORDINATOR_ADDRESS", "PATHWAYS_HEAD"},
}

// ExitAfterEnv and ExitCodeEnv tell a stand-in to exit, after that long
// (a Go duration), with that code: how a test plays a crash or a finish.
const (
	ExitAfterEnv = "PATHWAYS_STANDIN_EXIT_AFTER"
	ExitCodeEnv  = "PATHWAYS_STANDIN_EXIT_CODE"
)

// Options are a stand-in's role and xpk's arguments to it.
type Options struct {
	Role string
	// ServerPort (--server_port) and, for workers and the proxy,
	// ResourceManager (--resource_manager_address, host:port).
	ServerPort      int
	ResourceManager string
	// Host is where it listens (xpk's pods use hostNetwork: all addresses).
	Host   string
	Getenv func(string) string
	Out    io.Writer
}

// ExitError is a stand-in's told exit code.
type ExitError int

func (e ExitError) Error() string { return fmt.Sprintf("exit %d (%s)", int(e), ExitCodeEnv) }

// Check says what is missing for the role, naming the variables.
func Check(o Options) error {
	need, ok := Roles[o.Role]
	if !ok {
		return fmt.Errorf("--role %q: use proxy, resource-manager or worker", o.Role)
	}
	var missing []string
	for _, k := range need {
		if o.Getenv(k) == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s: the environment lacks %s (xpk's JobSet sets them from the JobSet's labels and annotations)", o.Role, strings.Join(missing, ", "))
	}
	if o.ServerPort <= 0 || o.ServerPort > 65535 {
		return fmt.Errorf("%s: --server_port %d: want a port, 1 to 65535", o.Role, o.ServerPort)
	}
	if o.Role != "resource-manager" && o.ResourceManager == "" {
		return fmt.Errorf("%s: --resource_manager_address is required", o.Role)
	}
	return nil
}

// Run plays the role until ctx ends (nil error) or it is told to exit.
func Run(ctx context.Context, o Options) error {
	if err := Check(o); err != nil {
		return err
	}
	ports := []int{o.ServerPort}
	if o.Role == "resource-manager" {
		ports = append(ports, o.ServerPort+1) // as Pathways' resource manager: 29001 and 29002
	}
	for _, p := range ports {
		l, err := net.Listen("tcp", net.JoinHostPort(o.Host, strconv.Itoa(p)))
		if err != nil {
			return fmt.Errorf("%s: listen on %d: %w", o.Role, p, err)
		}
		defer l.Close()
		go serve(l, o.Role)
		fmt.Fprintf(o.Out, "%s listening on %s\n", o.Role, l.Addr())
	}
	if o.Role == "worker" {
		if err := connect(ctx, o.ResourceManager); err != nil {
			return fmt.Errorf("worker: resource manager %s: %w", o.ResourceManager, err)
		}
		fmt.Fprintf(o.Out, "worker of slice %s/%s connected to the resource manager %s (coordinator %s)\n",
			o.Getenv("MEGASCALE_SLICE_ID"), o.Getenv("MEGASCALE_NUM_SLICES"), o.ResourceManager, o.Getenv("MEGASCALE_COORDINATOR_ADDRESS"))
	}
	var exit <-chan time.Time
	if v := o.Getenv(ExitAfterEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%s %q: want a duration such as 30s", ExitAfterEnv, v)
		}
		exit = time.After(d)
	}
	select {
	case <-ctx.Done():
		return nil
	case <-exit:
		code, _ := strconv.Atoi(o.Getenv(ExitCodeEnv))
		fmt.Fprintf(o.Out, "%s exits with %d as told\n", o.Role, code)
		if code != 0 {
			return ExitError(code)
		}
		return nil
	}
}

// serve answers every connection with the role's name.
func serve(l net.Listener, role string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		_, _ = io.WriteString(c, "pathways-standin "+role+"\n")
		_ = c.Close()
	}
}

// connect dials addr until it answers or ctx ends: the resource manager
// may start after a worker.
func connect(ctx context.Context, addr string) error {
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return c.Close()
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// Getenv is os.Getenv, for Options.
var Getenv = os.Getenv
