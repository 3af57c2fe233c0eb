package framework

import (
	"context"
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
	"github.com/multislice/multislice/internal/manager"
	"github.com/multislice/multislice/internal/versions"
)

// Env is a real kube-apiserver and etcd (the project's own binaries) with
// the JobSet CRD and the Multislice manager running in this process. There
// is no kube-controller-manager: tests play the Job controller themselves.
type Env struct {
	Config *rest.Config
	Client client.Client
}

// RequireEnvtest skips unless the control-plane binaries are built, and
// fails when MULTISLICE_E2E=1 promised they would be.
func envtestAssets(t testing.TB) string {
	dir := filepath.Join(BinDir(t), "envtest-"+versions.Kubernetes+"-"+versions.Etcd)
	if _, err := os.Stat(filepath.Join(dir, "kube-apiserver")); err != nil {
		if os.Getenv("MULTISLICE_E2E") == "1" {
			t.Fatalf("envtest binaries missing in %s: run `make binaries`", dir)
		}
		t.Skip("integration test: run `make test` (it builds the control plane)")
	}
	return dir
}

// StartEnv starts the apiserver and the manager with the given feature gates.
func StartEnv(t testing.TB, gates features.Gates) *Env {
	t.Helper()
	return StartEnvWith(t, func(o *manager.Options) { o.FeatureGates = gates })
}

// StartEnvWith starts the apiserver and the manager with its options edited
// by edit (e.g. the webhooks alone).
func StartEnvWith(t testing.TB, edit func(*manager.Options)) *Env {
	t.Helper()
	log.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	env := &envtest.Environment{
		BinaryAssetsDirectory: envtestAssets(t),
		CRDDirectoryPaths:     []string{filepath.Join(filepath.Dir(BinDir(t)), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("start envtest: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(cfg, client.Options{Scheme: manager.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "multislice-system"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	ports := FreePorts(t, 3)
	done := make(chan struct{})
	var runErr error
	o := manager.Options{
		SkipNameValidation: true, GroupLabel: "MultisliceGroup", GroupSizeLabel: "MultisliceGroupSize", SliceGrace: 10 * time.Second,
		Namespace: "multislice-system", MetricsAddr: fmt.Sprintf("127.0.0.1:%d", ports[1]),
		ProbeAddr: fmt.Sprintf("127.0.0.1:%d", ports[2]), WebhookHost: "127.0.0.1", WebhookPort: ports[0],
		CertDir:  t.TempDir(),
		Endpoint: manager.Endpoint{URLBase: fmt.Sprintf("https://127.0.0.1:%d", ports[0])},
		Workers:  4, QPS: 500, Burst: 500,
	}
	edit(&o)
	go func() {
		defer close(done)
		runErr = manager.Run(ctx, cfg, o)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("manager did not stop")
		}
	})
	Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
		select {
		case <-done:
			t.Fatalf("manager exited: %v", runErr)
		default:
		}
		// readyz includes the webhook server's check when it serves webhooks.
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[2]))
		if err != nil {
			return false, "manager not ready: " + err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, "readyz: " + resp.Status
	})
	return &Env{Config: cfg, Client: c}
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
	var out []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out
}
