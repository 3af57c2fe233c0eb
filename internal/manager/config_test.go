package manager

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/multislice/multislice/internal/features"
)

func TestApplyUpstreamConfig(t *testing.T) {
	// Upstream's own files: config/components/manager and its e2e config.
	shipped := "apiVersion: config.jobset.x-k8s.io/v1alpha1\nkind: Configuration\nleaderElection:\n  leaderElect: true\ninternalCertManagement:\n  enable: true\n"
	full := `apiVersion: config.jobset.x-k8s.io/v1alpha1
kind: Configuration
webhook: {port: 9444, host: 10.0.0.1, certDir: /certs}
leaderElection:
  leaderElect: true
  leaseDuration: 20s
  renewDeadline: 15s
  retryPeriod: 3s
  resourceLock: leases
  resourceName: 6d4f6a47.jobset.x-k8s.io
  resourceNamespace: jobset-system
metrics: {bindAddress: ":9090"}
health: {healthProbeBindAddress: ":9091", readinessEndpointName: readyz, livenessEndpointName: /healthz}
tls:
  minVersion: VersionTLS13
  cipherSuites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]
internalCertManagement: {enable: true, webhookServiceName: multislice-webhook-service}
clientConnection: {qps: 100, burst: 200}
featureGates: {InPlaceRestart: true, ExecutionAttemptsTracking: false}
`
	none := func(string) bool { return false }

	f := DefaultFlags()
	if err := f.applyConfig([]byte(shipped), none); err != nil {
		t.Fatalf("upstream's shipped configuration refused: %v", err)
	}
	if got, want := f.Args(), DefaultFlags().Args(); !slices.Equal(got, want) {
		t.Errorf("upstream's shipped configuration changed the defaults: %v", got)
	}

	f = DefaultFlags()
	if err := f.applyConfig([]byte(full), none); err != nil {
		t.Fatalf("a full configuration refused: %v", err)
	}
	f.Kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	kubeconfig := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: https://127.0.0.1:1}}]\ncontexts: [{name: c, context: {cluster: c}}]\ncurrent-context: c\n"
	if err := os.WriteFile(f.Kubeconfig, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	o, _, err := f.Complete()
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	want := []struct {
		name      string
		got, want any
	}{
		{"webhook port", o.WebhookPort, 9444}, {"webhook host", o.WebhookHost, "10.0.0.1"}, {"cert dir", o.CertDir, "/certs"},
		{"lease duration", o.LeaseDuration, 20 * time.Second}, {"renew deadline", o.RenewDeadline, 15 * time.Second},
		{"retry period", o.RetryPeriod, 3 * time.Second}, {"namespace", o.Namespace, "jobset-system"},
		{"metrics", o.MetricsAddr, ":9090"}, {"probes", o.ProbeAddr, ":9091"},
		{"TLS minimum", o.TLS.MinVersion, uint16(0x0304)}, {"cipher suites", len(o.TLS.CipherSuites), 2},
		{"qps", o.QPS, float32(100)}, {"burst", o.Burst, 200},
		{"gates", o.FeatureGates, features.Gates{InPlaceRestart: true}},
	}
	for _, w := range want {
		if w.got != w.want {
			t.Errorf("%s = %v, want %v", w.name, w.got, w.want)
		}
	}

	// A flag given on the command line wins over the file.
	f = DefaultFlags()
	f.WebhookPort = 7000
	if err := f.applyConfig([]byte(full), func(flag string) bool { return flag == "webhook-port" }); err != nil || f.WebhookPort != 7000 || f.QPS != 100 {
		t.Errorf("--webhook-port given: port %d, qps %g, err %v; want 7000 kept and the file's qps", f.WebhookPort, f.QPS, err)
	}

	for _, tc := range []struct{ name, body, want string }{
		{"unknown field", "controller:\n  groupKindConcurrency: {}\n", `unknown field "controller"`},
		{"unknown nested field", "webhook: {port: 1, tlsMinVersion: x}\n", `unknown field "webhook.tlsMinVersion"`},
		{"metrics certificate", "metrics: {certDir: /m}\n", "metrics.certDir"},
		{"another lease", "leaderElection: {resourceName: mine}\n", "leaderElection.resourceName"},
		{"configmap lock", "leaderElection: {resourceLock: configmaps}\n", "leaderElection.resourceLock"},
		{"external certificates", "internalCertManagement: {enable: false}\n", "internalCertManagement.enable"},
		{"another Service", "internalCertManagement: {webhookServiceName: jobset-webhook-service}\n", "internalCertManagement.webhookServiceName"},
		{"another readiness path", "health: {readinessEndpointName: ready}\n", "health.readinessEndpointName"},
		{"unknown gate", "featureGates: {TopologyAwareScheduling: true}\n", "featureGates.TopologyAwareScheduling"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := DefaultFlags()
			err := f.applyConfig([]byte("apiVersion: config.jobset.x-k8s.io/v1alpha1\nkind: Configuration\n"+tc.body), none)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to name %s", err, tc.want)
			}
		})
	}
	f = DefaultFlags()
	if err := f.applyConfig([]byte("apiVersion: v1\nkind: ConfigMap\n"), none); err == nil || !strings.Contains(err.Error(), ConfigAPIVersion) {
		t.Errorf("a ConfigMap given as the file: error %v, want one naming %s", err, ConfigAPIVersion)
	}
}
