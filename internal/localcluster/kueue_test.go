package localcluster

import (
	"os"
	"strconv"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

func TestKueueConfig(t *testing.T) {
	var cfg struct {
		APIVersion, Kind, Namespace string
		ClientConnection            struct {
			QPS   float64
			Burst int
		}
		Webhook struct {
			Host    string
			Port    int
			CertDir string
		}
		Health                 struct{ HealthProbeBindAddress string }
		Metrics                struct{ BindAddress string }
		LeaderElection         struct{ LeaderElect bool }
		InternalCertManagement struct{ Enable bool }
		WaitForPodsReady       struct {
			Timeout           string
			RecoveryTimeout   string
			BlockAdmission    bool
			RequeuingStrategy map[string]any
		}
		Integrations struct{ Frameworks []string }
		FeatureGates map[string]bool
	}
	if err := yaml.UnmarshalStrict([]byte(kueueConfig("/certs", 9443, 8443, 8081, 20*time.Second, 5*time.Second)), &cfg); err != nil {
		t.Fatalf("not a Kueue Configuration: %v", err)
	}
	if cfg.Webhook.Host != "127.0.0.1" || cfg.Webhook.Port != 9443 || cfg.Webhook.CertDir != "/certs" ||
		cfg.Health.HealthProbeBindAddress != "127.0.0.1:8081" || cfg.Metrics.BindAddress != "127.0.0.1:8443" {
		t.Errorf("servers not on the loopback ports given: %+v", cfg)
	}
	if cfg.LeaderElection.LeaderElect || cfg.InternalCertManagement.Enable {
		t.Errorf("one replica with given certificates: %+v", cfg)
	}
	if d, err := time.ParseDuration(cfg.WaitForPodsReady.Timeout); err != nil || d != 20*time.Second {
		t.Errorf("waitForPodsReady.timeout %q", cfg.WaitForPodsReady.Timeout)
	}
	if d, err := time.ParseDuration(cfg.WaitForPodsReady.RecoveryTimeout); err != nil || d != 5*time.Second {
		t.Errorf("waitForPodsReady.recoveryTimeout %q", cfg.WaitForPodsReady.RecoveryTimeout)
	}
	if len(cfg.Integrations.Frameworks) != 1 || cfg.Integrations.Frameworks[0] != "jobset.x-k8s.io/jobset" || cfg.FeatureGates["VisibilityOnDemand"] {
		t.Errorf("integrations %v, gates %v", cfg.Integrations.Frameworks, cfg.FeatureGates)
	}
}

func TestProcStat(t *testing.T) {
	comm, live := procStat(strconv.Itoa(os.Getpid()))
	if !live || comm == "" || !anyProcessNamed(comm) {
		t.Errorf("this test process: comm %q, live %v", comm, live)
	}
	if _, live := procStat("0"); live {
		t.Error("pid 0 has no /proc entry, yet it counts as live")
	}
}
