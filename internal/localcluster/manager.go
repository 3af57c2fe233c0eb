package localcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/multislice/multislice/internal/features"
	"github.com/multislice/multislice/internal/localcluster/sim"
	"github.com/multislice/multislice/internal/localcluster/sim/cloud"
	"github.com/multislice/multislice/internal/localcluster/sim/fleet"
	"github.com/multislice/multislice/internal/manager"
)

// StartManager runs `multislice manager` (the binary at exe) as one more
// component of the cluster, with its webhooks reached on the loopback and
// the given feature gates ("" for the defaults) and the fleet's group
// labels (placement and the dashboard find groups by them), and waits
// until it serves.
func (r *Running) StartManager(ctx context.Context, exe, featureGates string, groups fleet.GroupLabels) error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	webhook, metrics, probe := ports[0], ports[1], ports[2]
	f := manager.DefaultFlags()
	f.Kubeconfig = r.Home.pki("manager.kubeconfig")
	f.LeaderElect = false
	f.WebhookHost, f.WebhookPort, f.WebhookURL = "127.0.0.1", webhook, "https://127.0.0.1:"+strconv.Itoa(webhook)
	f.MetricsAddr, f.MetricsSecure = "127.0.0.1:"+strconv.Itoa(metrics), false // loopback only
	f.ProbeAddr = "127.0.0.1:" + strconv.Itoa(probe)
	f.CertDir = r.Home.path("webhook-certs")
	f.Gates = withLocalGates(featureGates)
	f.GroupLabel, f.GroupSizeLabel = groups.Name, groups.Size
	args := append([]string{"manager"}, f.Args()...)
	if extra := os.Getenv("MULTISLICE_MANAGER_ARGS"); extra != "" {
		args = append(args, strings.Fields(extra)...) // e.g. --feature-gates=RestartJob=true
	}
	if own := os.Getenv("MULTISLICE_MANAGER_BINARY"); own != "" {
		exe = own // the manager-only build (cmd/multislice-manager), as the image runs it
	}
	// e.g. GOGC=100: the Go runtime's settings for the manager alone, where
	// the shell's would reach every component.
	env := strings.Fields(os.Getenv("MULTISLICE_MANAGER_ENV"))
	if err := r.launchEnv("multislice-manager", exe, args, env, webhook, metrics, probe); err != nil {
		return err
	}
	// readyz includes the webhook server's TLS check, so once it passes
	// JobSets can be admitted.
	ready := httpOK("http://127.0.0.1:"+strconv.Itoa(probe)+"/readyz", nil)
	return r.WaitFor(ctx, "multislice-manager", 60*time.Second, ready)
}

// withLocalGates turns on what the local cluster serves and GKE's own
// controllers would do elsewhere (DynamicSlicing), unless gates say.
func withLocalGates(gates string) string {
	if strings.Contains(gates, features.DynamicSlicing+"=") {
		return gates
	}
	return strings.Trim(features.DynamicSlicing+"=true,"+gates, ",")
}

// StartRepairer runs `multislice cloud-repair` (the binary at exe), the
// simulated cloud's slice repair, as one more component, told the lease
// kwok keeps for the fleet's nodes.
func (r *Running) StartRepairer(exe string, delay time.Duration) error {
	return r.launch("cloud-repair", exe, append([]string{"cloud-repair"}, cloud.RepairFlags{Delay: delay, NodeLease: r.nodeLease}.Args()...))
}

// StartSimAgents runs `multislice sim-agents`: the in-place restart agent
// of every simulated pod that has one (kwok runs no container), and the
// simulated kubelets' log endpoint behind the API server's egress proxy.
func (r *Running) StartSimAgents(exe string) error {
	flags := sim.AgentsFlags{EgressPort: r.egressPort, APIServerRelay: r.apiRelay}
	return r.launch("sim-agents", exe, append([]string{"sim-agents"}, flags.Args()...), r.egressPort)
}

// KubeletTLS is what the simulated kubelets serve with: the cluster's
// kubelet certificate, and only clients the cluster's CA signed.
func (h Home) KubeletTLS() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(h.pki("kubelet.crt"), h.pki("kubelet.key"))
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(h.pki("ca.crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("no certificate in %s", h.pki("ca.crt"))
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert,
		MinVersion: tls.VersionTLS12}, nil
}
