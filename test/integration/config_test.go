package integration

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/multislice/multislice/internal/features"
	"github.com/multislice/multislice/internal/manager"
	"github.com/multislice/multislice/test/framework"
)

// TestUpstreamConfiguration: `multislice manager --config FILE` takes a
// team's upstream Configuration (its manager-config ConfigMap) as it is;
// what it sets is in force (here: TLS 1.3 at least, a gate on), and a
// field Multislice does not know is refused by name.
func TestUpstreamConfiguration(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte("apiVersion: config.jobset.x-k8s.io/v1alpha1\nkind: Configuration\n"+body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	load := func(args ...string) (manager.Flags, error) {
		var f manager.Flags
		fs := pflag.NewFlagSet("manager", pflag.ContinueOnError)
		f.Bind(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return f, f.ApplyConfigFile(fs)
	}

	f, err := load("--config=" + write("good.yaml", "leaderElection:\n  leaderElect: true\ninternalCertManagement:\n  enable: true\n"+
		"tls:\n  minVersion: VersionTLS13\nfeatureGates:\n  InPlaceRestart: true\n"))
	if err != nil {
		t.Fatalf("upstream's configuration refused: %v", err)
	}
	gates, err := features.Parse(f.Gates)
	if err != nil || !gates.InPlaceRestart {
		t.Fatalf("gates %+v (%v): want InPlaceRestart on from featureGates", gates, err)
	}
	tlsOpts, err := manager.ParseTLSOptions(f.TLSMinVersion, nil) // the file names no suites
	if err != nil {
		t.Fatal(err)
	}
	env := framework.StartEnvWith(t, func(o *manager.Options) { o.TLS, o.FeatureGates = tlsOpts, gates })
	waitListening(t, env.WebhookAddr)
	if err := handshake(env.WebhookAddr, tls.VersionTLS12, tls.VersionTLS12); err == nil {
		t.Error("the configuration's tls.minVersion VersionTLS13 is not in force: a TLS 1.2 handshake succeeded")
	}
	if err := handshake(env.WebhookAddr, tls.VersionTLS13, tls.VersionTLS13); err != nil {
		t.Errorf("TLS 1.3: %v", err)
	}

	if _, err := load("--config=" + write("unknown.yaml", "webhook:\n  port: 9443\n  tlsMinVersion: VersionTLS12\n")); err == nil ||
		!strings.Contains(err.Error(), `unknown field "webhook.tlsMinVersion"`) {
		t.Errorf("an unknown field: error %v, want it named", err)
	}
	if f, err := load("--config="+write("flag.yaml", "webhook:\n  port: 9444\n"), "--webhook-port=9555"); err != nil || f.WebhookPort != 9555 {
		t.Errorf("--webhook-port given with the file: port %d (%v), want the flag's 9555", f.WebhookPort, err)
	}
}
