package framework

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/multislice/multislice/internal/features"
	"github.com/multislice/multislice/internal/install"
	"github.com/multislice/multislice/internal/manager"
	"github.com/multislice/multislice/internal/objcache"
	"github.com/multislice/multislice/internal/podgroups"
	"github.com/multislice/multislice/internal/versions"
)

// Env is a real kube-apiserver and etcd (the project's own binaries) with
// the JobSet CRD and the Multislice manager running in this process. There
// is no kube-controller-manager: tests play the Job controller themselves.
type Env struct {
	Config *rest.Config
	Client client.Client
	// WebhookAddr and MetricsAddr are where the manager serves them.
	WebhookAddr, MetricsAddr string
}

// ErrNoBinaries: the control-plane binaries envtest runs are not built.
var ErrNoBinaries = errors.New("envtest binaries missing: run `make binaries` (make test builds them)")

// StartEnv starts the apiserver and the manager with the given feature gates.
func StartEnv(t testing.TB, gates features.Gates) *Env {
	t.Helper()
	return StartEnvWith(t, func(o *manager.Options) { o.FeatureGates = gates })
}

// StartEnvWith starts the apiserver and the manager with its options edited
// by edit (e.g. the webhooks alone), for one test: it stops with the test.
func StartEnvWith(t testing.TB, edit func(*manager.Options)) *Env {
	t.Helper()
	env, stop, err := NewEnv(edit)
	SkipOrFail(t, err)
	t.Cleanup(stop)
	return env
}

// SkipOrFail ends a test that has no environment: it skips when the
// binaries are not built, unless MULTISLICE_E2E=1 promised they would be.
func SkipOrFail(t testing.TB, err error) {
	t.Helper()
	switch {
	case err == nil:
	case errors.Is(err, ErrNoBinaries) && os.Getenv("MULTISLICE_E2E") != "1":
		t.Skip("integration test: run `make test` (it builds the control plane)")
	default:
		t.Fatal(err)
	}
}

// NewEnv starts the apiserver and the manager with its options edited by
// edit; stop ends both. A package's TestMain can share one among its tests.
func NewEnv(edit func(*manager.Options)) (env *Env, stop func(), err error) {
	log.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	root, err := repoRoot()
	if err != nil {
		return nil, nil, err
	}
	bin := filepath.Join(root, "bin")
	if d := os.Getenv("MULTISLICE_BIN_DIR"); d != "" {
		bin = d
	}
	assets := filepath.Join(bin, "envtest-"+versions.Kubernetes+"-"+versions.Etcd)
	if _, err := os.Stat(filepath.Join(assets, "kube-apiserver")); err != nil {
		return nil, nil, fmt.Errorf("%w (%s)", ErrNoBinaries, assets)
	}
	var stops []func()
	stopAll := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	defer func() {
		if err != nil {
			stopAll() // not stop: an error return has set it to nil
		}
	}()
	te := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	probe := manager.DefaultFlags().Options
	edit(&probe)
	if probe.FeatureGates.WorkloadAwareScheduling {
		// spec.scheduling's Workload API (beta, off by default), as the
		// local cluster serves it; otherwise a default API server, as a
		// cluster has, on which the manager must start too.
		te.ControlPlane.GetAPIServer().Configure().
			Set("runtime-config", podgroups.RuntimeConfig).Set("feature-gates", podgroups.KubernetesGates)
	}
	cfg, err := te.Start()
	if err != nil {
		return nil, nil, fmt.Errorf("start envtest: %w", err)
	}
	stops = append(stops, func() { _ = te.Stop() })
	c, err := client.New(cfg, client.Options{Scheme: objcache.Scheme()})
	if err != nil {
		return nil, nil, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: install.Namespace}}
	if err := c.Create(context.Background(), ns); err != nil {
		return nil, nil, err
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, nil, err
	}
	certs, err := os.MkdirTemp("", "envtest-certs-")
	if err != nil {
		return nil, nil, err
	}
	stops = append(stops, func() { _ = os.RemoveAll(certs) })
	// The defaults of `multislice manager`, then what a test process needs:
	// one replica, plain loopback metrics, its own ports and certificates.
	o := manager.DefaultFlags().Options
	o.SkipNameValidation, o.LeaderElect, o.MetricsSecure = true, false, false
	o.MetricsAddr, o.ProbeAddr = fmt.Sprintf("127.0.0.1:%d", ports[1]), fmt.Sprintf("127.0.0.1:%d", ports[2])
	o.WebhookHost, o.WebhookPort, o.CertDir = "127.0.0.1", ports[0], certs
	o.Endpoint = manager.Endpoint{URLBase: fmt.Sprintf("https://127.0.0.1:%d", ports[0])}
	o.Workers = 4
	edit(&o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var runErr error
	go func() {
		defer close(done)
		runErr = manager.Run(ctx, cfg, o)
	}()
	stops = append(stops, func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			fmt.Fprintln(os.Stderr, "envtest: the manager did not stop within 30s")
		}
	})
	// readyz includes the webhook server's check when it serves webhooks.
	readyz := fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[2])
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		select {
		case <-done:
			return nil, nil, fmt.Errorf("manager exited: %v", runErr)
		default:
		}
		resp, err := http.Get(readyz)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("manager not ready after 60s (%s: %v)", readyz, err)
		}
	}
	return &Env{Config: cfg, Client: c, WebhookAddr: fmt.Sprintf("127.0.0.1:%d", ports[0]), MetricsAddr: o.MetricsAddr}, stopAll, nil
}

// Namespace creates a fresh namespace for one test case.
func (e *Env) Namespace(t testing.TB) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}
	if err := e.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// FreePorts are n loopback ports free right now.
func FreePorts(t testing.TB, n int) []int {
	ports, err := freePorts(n)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

func freePorts(n int) ([]int, error) {
	var out []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}
