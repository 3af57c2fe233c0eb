package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/multislice/multislice/internal/install"
	"github.com/multislice/multislice/internal/kueue"
	"github.com/multislice/multislice/internal/versions"
)

// KueueUser is the user the local Kueue authenticates as; `up --kueue`
// grants it Kueue's shipped permissions (its ClusterRole and the Role on
// its namespace's Secrets), nothing more.
const KueueUser = "multislice-kueue"

// kueueMetricsCerts is where Kueue reads its metrics server's certificate
// when it does not make its own (it would make them for a Service's DNS
// name, which the API server cannot check against a loopback URL): a
// fixed path, outside the cluster's home. `up --kueue` writes it, `down`
// removes it once no Kueue runs on the machine.
const kueueMetricsCerts = "/etc/kueue/metrics/certs"

// KueueDir holds Kueue's binary and the manifests copied from its module.
func (b Binaries) KueueDir() string { return filepath.Join(b.Dir, "kueue-"+versions.Kueue) }
func (b Binaries) Kueue() string    { return filepath.Join(b.KueueDir(), "kueue") }

// InstallKueue puts Kueue's CRDs, namespace and permissions (for
// KueueUser) into the cluster. It runs before the controllers start, so
// that the garbage collector knows Workloads from its first discovery:
// installed later, a deleted JobSet's Workload (and the quota it holds)
// went only at the collector's next discovery, 15-30 s later.
func (r *Running) InstallKueue(ctx context.Context, b Binaries) error {
	m, err := kueue.Load(filepath.Join(b.KueueDir(), "config"))
	if err != nil {
		return err
	}
	r.say("installing Kueue %s: CRDs and permissions", versions.Kueue)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kueue.Namespace}}
	if _, err := r.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	// Conversion is pointed at Kueue's webhook when Kueue starts; until
	// then nothing reads an old version.
	crds := make([]runtime.Object, len(m.CRDs))
	for i, c := range m.CRDs {
		crds[i] = c
	}
	if err := apply(ctx, r, crds...); err != nil {
		return err
	}
	if err := install.WaitServed(ctx, r.Config, m.CRDs...); err != nil {
		return fmt.Errorf("Kueue's CRDs: %w", err)
	}
	if err := install.ApplyRBAC(ctx, r.Config, m.RBAC, kueue.Namespace, KueueUser); err != nil {
		return fmt.Errorf("grant Kueue its permissions: %w", err)
	}
	return install.WaitAllowed(ctx, r.Client, KueueUser,
		authorizationv1.ResourceAttributes{Verb: "update", Group: kueue.Group, Resource: "workloads", Subresource: "status"},
		authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Namespace: kueue.Namespace})
}

// StartKueue runs Kueue as one more component, its webhooks served on the
// loopback with a certificate of the cluster's CA (only those of Kueue's
// and JobSet's objects: no pod waits on it) and the CRDs' conversion
// pointed at it, the JobSet integration on; it returns once Kueue serves
// its webhooks.
func (r *Running) StartKueue(ctx context.Context, b Binaries, podsReady, recovery time.Duration) error {
	h := r.Home
	m, err := kueue.Load(filepath.Join(b.KueueDir(), "config"))
	if err != nil {
		return err
	}
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	webhook, metrics, probe := ports[0], ports[1], ports[2]
	ca, err := os.ReadFile(h.pki("ca.crt"))
	if err != nil {
		return err
	}
	m.ServeAt("https://127.0.0.1:"+strconv.Itoa(webhook), ca)
	if err := h.writeKueueCerts(); err != nil {
		return err
	}
	if err := os.WriteFile(h.path("kueue.yaml"), []byte(kueueConfig(h.path("kueue-certs"), webhook, metrics, probe, podsReady, recovery)), 0o600); err != nil {
		return err
	}
	if err := r.launchEnv("kueue", b.Kueue(), []string{"--config=" + h.path("kueue.yaml")},
		[]string{"KUBECONFIG=" + h.pki("kueue.kubeconfig")}, webhook, metrics, probe); err != nil {
		return err
	}
	// readyz passes once the webhook server serves.
	if err := r.WaitFor(ctx, "kueue", 90*time.Second, httpOK("http://127.0.0.1:"+strconv.Itoa(probe)+"/readyz", nil)); err != nil {
		return err
	}
	objs := []runtime.Object{m.Mutating, m.Validating}
	for _, c := range m.CRDs {
		if c.Spec.Conversion != nil {
			objs = append(objs, c)
		}
	}
	return apply(ctx, r, objs...)
}

// apply applies typed objects server-side.
func apply(ctx context.Context, r *Running, objs ...runtime.Object) error {
	us := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return err
		}
		us[i] = &unstructured.Unstructured{Object: m}
		gvk := o.GetObjectKind().GroupVersionKind()
		if gvk.Empty() {
			return fmt.Errorf("%T has no apiVersion and kind", o)
		}
	}
	return install.Apply(ctx, r.Config, "multislice", us)
}

// writeKueueCerts writes Kueue's serving certificates (the cluster CA's,
// for 127.0.0.1) where it reads them: the home's and kueueMetricsCerts,
// which another cluster's `down` may have removed before a heal.
func (h Home) writeKueueCerts() error {
	cert, err := os.ReadFile(h.pki("kueue-serving.crt"))
	if err != nil {
		return err
	}
	key, err := os.ReadFile(h.pki("kueue-serving.key"))
	if err != nil {
		return err
	}
	for _, dir := range []string{h.path("kueue-certs"), kueueMetricsCerts} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "tls.crt"), cert, 0o600); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "tls.key"), key, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// kueueConfig is Kueue's Configuration for a local cluster: one replica
// (no leader election), every server on the loopback, certificates given
// rather than made, only the JobSet integration, and pods-ready
// tracking: a JobSet admitted whose pods are not all ready within
// podsReady (e.g. one placement cannot place) is evicted and requeued, so
// it gives its quota back; requeued after at most 30 s (Kueue's
// backoff grows with every eviction and is not reset by a run that went
// well: at base 10 s, evictions 4 to 7 of one JobSet waited 12.7, 24.0,
// 43.9 and 83.8 s). recovery (when not 0) is how long pods that
// were all ready may be not ready again (a restart) before Kueue evicts.
func kueueConfig(certDir string, webhook, metrics, probe int, podsReady, recovery time.Duration) string {
	recoveryLine := ""
	if recovery > 0 {
		recoveryLine = fmt.Sprintf("\n  recoveryTimeout: %s", recovery)
	}
	return fmt.Sprintf(`apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: %s
health:
  healthProbeBindAddress: 127.0.0.1:%d
metrics:
  bindAddress: 127.0.0.1:%d
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
clientConnection:
  qps: 50
  burst: 100
waitForPodsReady:
  timeout: %s%s
  blockAdmission: false
  requeuingStrategy:
    timestamp: Eviction
    backoffBaseSeconds: 1
    backoffMaxSeconds: 30
integrations:
  frameworks: [%s]
featureGates:
  VisibilityOnDemand: false
`, kueue.Namespace, probe, metrics, webhook, certDir, podsReady, recoveryLine, kueue.Framework)
}

// KueuePodsReadyTimeout is how long, by default, a JobSet Kueue admitted
// may take to have every pod ready before Kueue evicts and requeues it.
const KueuePodsReadyTimeout = 5 * time.Minute

// removeKueueMetricsCerts removes kueueMetricsCerts when no Kueue runs
// on the machine any more.
func removeKueueMetricsCerts() error {
	if anyProcessNamed("kueue") {
		return nil
	}
	return os.RemoveAll(filepath.Dir(filepath.Dir(kueueMetricsCerts)))
}

// anyProcessNamed: a live process (not a zombie) of the machine runs a
// binary called name.
func anyProcessNamed(name string) bool {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		if comm, live := procStat(d.Name()); live && comm == name {
			return true
		}
	}
	return false
}
