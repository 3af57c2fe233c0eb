package localcluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/multislice/multislice/internal/install"
	"github.com/multislice/multislice/internal/localcluster/sim"
)

// StartOptions configures Start.
type StartOptions struct {
	Home     Home
	Binaries Binaries
	// APIServerPort is the apiserver's port; 0 picks a free one.
	APIServerPort int
	// Progress receives one line per step.
	Progress io.Writer
	// RealHosts are the node names of the fleet's real hosts: each gets a
	// node identity, and their binaries must be built.
	RealHosts []string
	// NodeLease is the lease kwok keeps for each simulated node
	// (sim.NodeLease of the fleet's size; 0: a kubelet's).
	NodeLease time.Duration
	// BeforeControllers runs once the API serves, before the controllers
	// start: CRDs installed here are known to the garbage collector from
	// its first discovery, so owned objects are collected at once.
	BeforeControllers func(context.Context, *Running) error
}

// Running is a control plane started by this process.
type Running struct {
	Home      Home
	Config    *rest.Config
	Client    kubernetes.Interface
	processes []*started
	progress  io.Writer
	// egressPort is where the API server expects its egress proxy.
	egressPort int
	// nodeLease is the lease kwok keeps for each simulated node.
	nodeLease time.Duration
	// apiRelay is where pods on real hosts reach the API server, and
	// kubeProxyHealth kube-proxy's health URL ("" without real hosts).
	apiRelay, kubeProxyHealth string
	// registry is the local registry's host:port ("" without real hosts).
	registry string
}

// ErrAlreadyRunning means Home already holds a live cluster.
var ErrAlreadyRunning = errors.New("a cluster is already running")

// Start brings up etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok, and returns once the API serves requests. On
// failure it stops whatever it started.
func Start(ctx context.Context, opts StartOptions) (*Running, error) {
	h := opts.Home
	if st, err := h.ReadState(); err != nil {
		return nil, err
	} else if st != nil && anyAlive(st.Processes) {
		return nil, fmt.Errorf("%w in %s (API server %s): use it (export KUBECONFIG=%s), or stop it with `multislice down`",
			ErrAlreadyRunning, h, st.APIServer, h.Kubeconfig())
	}
	if err := opts.Binaries.Check(len(opts.RealHosts) > 0); err != nil {
		return nil, err
	}
	// Whatever real hosts of an earlier cluster here left on the machine.
	if err := h.cleanRealHosts(); err != nil {
		return nil, fmt.Errorf("clean up the real hosts of the previous cluster in %s: %w", h, err)
	}
	p, err := pickPorts(opts.APIServerPort)
	if err != nil {
		return nil, err
	}
	// A fresh cluster each time: old data and credentials are dropped, logs kept.
	for _, dir := range []string{"etcd", "pki"} {
		if err := os.RemoveAll(h.path(dir)); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(h.path("logs"), 0o700); err != nil {
		return nil, err
	}
	if err := writePKI(h.path("pki"), opts.RealHosts); err != nil {
		return nil, fmt.Errorf("generate credentials: %w", err)
	}
	lease := opts.NodeLease
	if lease == 0 {
		lease = sim.KubeletLease
	}
	if err := h.writeConfigs(p, lease); err != nil {
		return nil, err
	}
	r := &Running{Home: h, progress: opts.Progress, egressPort: p.Egress, nodeLease: lease}
	if err := r.boot(ctx, opts, p); err != nil {
		r.Stop()
		return nil, err
	}
	return r, nil
}

func (r *Running) boot(ctx context.Context, opts StartOptions, p ports) error {
	h, b := r.Home, opts.Binaries
	if err := r.launch("etcd", b.Etcd(), h.etcdArgs(p), p.EtcdClient, p.EtcdPeer); err != nil {
		return err
	}
	etcdTLS, err := h.etcdClientTLS()
	if err != nil {
		return err
	}
	if err := r.WaitFor(ctx, "etcd", 30*time.Second, httpOK("https://127.0.0.1:"+strconv.Itoa(p.EtcdClient)+"/health", etcdTLS)); err != nil {
		return err
	}
	apiArgs := h.apiServerArgs(p)
	if extra := os.Getenv("MULTISLICE_APISERVER_ARGS"); extra != "" {
		apiArgs = append(apiArgs, strings.Fields(extra)...) // e.g. an audit log for a bench
	}
	if err := r.launch("kube-apiserver", b.APIServer(), apiArgs, p.APIServer); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", h.Kubeconfig())
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 500, 1000
	r.Config = cfg
	if r.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return err
	}
	if err := r.WaitFor(ctx, "kube-apiserver", 90*time.Second, httpOK(cfg.Host+"/readyz", tlsCfg)); err != nil {
		return err
	}
	if err := install.ApplyRBAC(ctx, cfg, sim.KwokRBAC, "", kwokUser); err != nil {
		return fmt.Errorf("grant kwok its permissions: %w", err)
	}
	if err := install.WaitAllowed(ctx, r.Client, kwokUser, authorizationv1.ResourceAttributes{Verb: "patch", Resource: "pods", Subresource: "status"}); err != nil {
		return err
	}
	if opts.BeforeControllers != nil {
		if err := opts.BeforeControllers(ctx, r); err != nil {
			return err
		}
	}
	if err := r.launch("kube-controller-manager", b.ControllerManager(), h.controllerManagerArgs(p, r.nodeLease), p.ControllerManager); err != nil {
		return err
	}
	if err := r.launch("kube-scheduler", b.Scheduler(), h.schedulerArgs(p), p.Scheduler); err != nil {
		return err
	}
	if err := r.launch("kwok", b.Kwok(), h.kwokArgs(p), p.Kwok); err != nil {
		return err
	}
	insecure := &tls.Config{InsecureSkipVerify: true} // loopback health endpoints with self-signed certs
	for name, port := range map[string]int{"kube-controller-manager": p.ControllerManager, "kube-scheduler": p.Scheduler} {
		if err := r.WaitFor(ctx, name, 60*time.Second, httpOK("https://127.0.0.1:"+strconv.Itoa(port)+"/healthz", insecure)); err != nil {
			return err
		}
	}
	return r.WaitFor(ctx, "kwok", 30*time.Second, httpOK("http://127.0.0.1:"+strconv.Itoa(p.Kwok)+"/healthz", nil))
}

// launch starts a component and records it in the state file at once, so
// that `down` can stop it even if `up` is killed half-way.
func (r *Running) launch(name, binary string, args []string, ports ...int) error {
	return r.launchEnv(name, binary, args, nil, ports...)
}

// launchEnv is launch with env added to the component's environment.
func (r *Running) launchEnv(name, binary string, args, env []string, ports ...int) error {
	r.say("starting %s", name)
	s, err := startEnv(name, binary, r.Home.Log(name), args, env, ports)
	if err != nil {
		return err
	}
	r.processes = append(r.processes, s)
	return r.Home.writeState(r.state())
}

func (r *Running) state() *State {
	st := &State{}
	if r.Config != nil {
		st.APIServer = r.Config.Host
	}
	for _, s := range r.processes {
		st.Processes = append(st.Processes, s.Process)
	}
	return st
}

// WaitFor polls ready until it reports true, failing early, with the log to
// read, when a component started by this process exits.
func (r *Running) WaitFor(ctx context.Context, what string, timeout time.Duration, ready func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		for _, s := range r.processes {
			select {
			case <-s.exited:
				return s.crashError()
			default:
			}
		}
		ok, err := ready(ctx)
		if ok {
			return nil
		}
		if err != nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			msg := fmt.Sprintf("%s was not ready within %s", what, timeout)
			if lastErr != nil {
				msg += fmt.Sprintf(" (last error: %v)", lastErr)
			}
			if s := r.find(what); s != nil {
				msg += "; read its log: " + s.log + "\n" + tail(s.log, 8)
			}
			return errors.New(msg)
		case <-tick.C:
		}
	}
}

func (r *Running) find(name string) *started {
	for _, s := range r.processes {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Stop ends every component this process started, newest first.
func (r *Running) Stop() {
	for i := len(r.processes) - 1; i >= 0; i-- {
		r.processes[i].stop(10 * time.Second)
	}
	_ = os.Remove(r.Home.statePath())
}

func (r *Running) say(format string, args ...any) {
	if r.progress != nil {
		fmt.Fprintf(r.progress, format+"\n", args...)
	}
}

func httpOK(url string, tlsCfg *tls.Config) func(context.Context) (bool, error) {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	return func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false, fmt.Errorf("%s: %s", url, resp.Status)
		}
		return true, nil
	}
}

// unixListening reports whether something accepts connections on the unix
// socket at path.
func unixListening(path string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "unix", path)
		if err != nil {
			return false, err
		}
		conn.Close()
		return true, nil
	}
}

func pickPorts(apiServer int) (ports, error) {
	var p ports
	if apiServer != 0 {
		if !portFree(apiServer) {
			return p, fmt.Errorf("port %d on 127.0.0.1 is in use: choose another with --apiserver-port (0 picks a free one), or stop what listens there", apiServer)
		}
		p.APIServer = apiServer
	}
	for _, port := range []*int{&p.APIServer, &p.EtcdClient, &p.EtcdPeer, &p.Scheduler, &p.ControllerManager, &p.Kwok, &p.Egress} {
		if *port != 0 {
			continue
		}
		n, err := freePort()
		if err != nil {
			return p, fmt.Errorf("find a free port on 127.0.0.1: %w", err)
		}
		*port = n
	}
	return p, nil
}

func anyAlive(ps []Process) bool {
	for _, p := range ps {
		if p.alive() {
			return true
		}
	}
	return false
}
