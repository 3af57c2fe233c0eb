package manager

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/cmdline"
	"github.com/multislice/multislice/internal/controller/jobset/policy"
	"github.com/multislice/multislice/internal/features"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/install"
)

// Flags is the command line of `multislice manager`: the Options a flag sets
// directly, and the raw values Complete turns into the rest. The command
// binds it; a program that starts a manager (the local cluster, tests) fills
// it and calls Args, so every flag's name and default lives here only.
type Flags struct {
	Options
	Kubeconfig    string
	Config        string // --config: upstream's Configuration file (ApplyConfigFile)
	TLSMinVersion string // --tls-min-version, parsed into Options.TLS
	TLSCiphers    string // --tls-cipher-suites (comma-separated), likewise
	Gates         string // --feature-gates, parsed into Options.FeatureGates
	WebhookURL    string
	Controllers   string // all | none
	Webhooks      string // all | none
}

// DefaultFlags is what the manager runs with when given no flags.
func DefaultFlags() Flags {
	var f Flags
	f.Bind(pflag.NewFlagSet("defaults", pflag.ContinueOnError))
	return f
}

// Bind defines the manager's flags on fl, each writing into f, and sets f
// to their defaults.
func (f *Flags) Bind(fl *pflag.FlagSet) {
	o := &f.Options
	fl.StringVar(&f.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster configuration)")
	fl.StringVar(&f.Config, "config", "", "upstream JobSet's configuration file ("+ConfigAPIVersion+" "+ConfigKind+"), read into the flags not given; a field Multislice cannot honour is refused by name")
	fl.StringVar(&o.Namespace, "namespace", install.Namespace, "namespace of the webhook Service, certificate Secret and leader-election Lease")
	fl.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8443", "address of the Prometheus /metrics endpoint (0 disables it)")
	fl.BoolVar(&o.MetricsSecure, "metrics-secure", true, "serve /metrics over HTTPS to callers whose token may get /metrics (TokenReview + SubjectAccessReview); false: plain HTTP, for a loopback address")
	fl.StringVar(&o.DashboardAddr, "dashboard-bind-address", "0", "address of the dashboard page (0 disables it); it has no authentication: bind it to loopback or put it behind an authenticating proxy")
	fl.StringVar(&o.PprofAddr, "pprof-bind-address", "", "address of the Go profiler endpoints /debug/pprof (empty: off)")
	fl.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	fl.BoolVar(&o.LeaderElect, "leader-elect", true, "elect a leader so that only one replica reconciles")
	fl.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", 8*time.Second, "how long a standby waits after the leader's last renewal before it takes over")
	fl.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", 6*time.Second, "how long the leader keeps trying to renew before it gives up leading (and exits)")
	fl.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", time.Second, "how often the leader renews and a standby tries to take over")
	fl.StringVar(&o.WebhookHost, "webhook-host", "", "address the webhook server binds to (default all)")
	fl.IntVar(&o.WebhookPort, "webhook-port", 9443, "port of the webhook server")
	fl.StringVar(&o.CertDir, "cert-dir", "/tmp/multislice-webhook-certs", "where the managed serving certificate is written")
	fl.StringVar(&f.WebhookURL, "webhook-url", "", "reach the webhooks at this URL base (e.g. https://127.0.0.1:9443) instead of through the Service")
	fl.StringVar(&f.Gates, "feature-gates", "", features.Help())
	fl.StringVar(&o.TPUWebhook, "tpu-webhook", "auto", "inject and validate the TPU environment of TPU Jobs: true, false, or auto (false on GKE, whose own webhook does it)")
	fl.StringVar(&f.Controllers, "controllers", "all", "all: run the JobSet controller, placement and slice health; none: webhooks only")
	fl.StringVar(&f.Webhooks, "webhooks", "all", "all: serve and install the admission webhooks; none: controllers only")
	fl.StringVar(&o.GroupLabel, "group-label", gke.MultisliceGroupLabel, "node label naming a node pool's multislice group")
	fl.StringVar(&o.GroupSizeLabel, "group-size-label", gke.MultisliceGroupSizeLabel, "node label giving the size of a multislice group")
	fl.DurationVar(&o.SliceGrace, "slice-notready-grace", 10*time.Second, "how long one host of a slice may be NotReady before the slice is failed and its JobSet restarted")
	fl.DurationVar(&o.AgentTimeout, "in-place-restart-timeout", policy.DefaultAgentTimeout, "how long an in-place restart (InPlaceRestart gate) may make no progress while running pods lag behind before every Job is recreated instead")
	fl.BoolVar(&o.HotSwap, "hot-swap", true, "let a JobSet whose slice failed, when no healthy free pool fits, take the pools of JobSets of strictly lower priority (a JobSet opts out with the annotation "+api.HotSwapAnnotation+": \"false\"); docs/auto-repair.md")
	fl.BoolVar(&o.NoSliceHealth, "no-slice-health", false, "do not fail slices with a broken host (upstream behaviour; for comparisons)")
	fl.IntVar(&o.Workers, "workers", 8, "concurrent JobSet reconciles")
	fl.Float32Var(&o.QPS, "kube-api-qps", 500, "client requests per second to the apiserver")
	fl.IntVar(&o.Burst, "kube-api-burst", 500, "client request burst")
	fl.StringVar(&f.TLSMinVersion, "tls-min-version", "VersionTLS12", "minimum TLS version of the webhook and metrics servers: VersionTLS12 or VersionTLS13")
	fl.StringVar(&f.TLSCiphers, "tls-cipher-suites", "", "TLS 1.2 cipher suites of the webhook and metrics servers, by IANA name (default: Go's secure list); weak suites are refused")
}

// Args is the command line that gives a manager f: every flag whose value
// differs from its default, as --name=value, in name order.
func (f Flags) Args() []string { return cmdline.Args(f, (*Flags).Bind) }

// Complete checks the flags and turns them into the manager's Options and
// the API server's address.
func (f Flags) Complete() (Options, *rest.Config, error) {
	o := f.Options
	var err error
	if o.FeatureGates, err = features.Parse(f.Gates); err != nil {
		return o, nil, err
	}
	if o.NoControllers, err = onOff("--controllers", f.Controllers); err != nil {
		return o, nil, err
	}
	if o.NoWebhooks, err = onOff("--webhooks", f.Webhooks); err != nil {
		return o, nil, err
	}
	if o.NoControllers && o.NoWebhooks {
		return o, nil, fmt.Errorf("--controllers=none and --webhooks=none leave nothing to run: keep one of them")
	}
	if o.AgentTimeout < time.Second || o.AgentTimeout > time.Hour {
		return o, nil, fmt.Errorf("--in-place-restart-timeout=%s: want 1s to 1h (default %s)", o.AgentTimeout, policy.DefaultAgentTimeout)
	}
	if o.SliceGrace < 0 || o.SliceGrace > time.Hour {
		return o, nil, fmt.Errorf("--slice-notready-grace=%s: want 0s to 1h (0 fails a slice as soon as a host is NotReady)", o.SliceGrace)
	}
	if o.Workers < 1 || o.Workers > 256 {
		return o, nil, fmt.Errorf("--workers=%d: want 1 to 256", o.Workers)
	}
	if o.QPS <= 0 || o.QPS > 10000 || o.Burst < 1 || o.Burst > 20000 {
		return o, nil, fmt.Errorf("--kube-api-qps=%g --kube-api-burst=%d: want a rate of (0, 10000] and a burst of 1 to 20000", o.QPS, o.Burst)
	}
	if o.LeaderElect && !(o.RetryPeriod > 0 && o.RetryPeriod < o.RenewDeadline && o.RenewDeadline < o.LeaseDuration) {
		return o, nil, fmt.Errorf("--leader-elect-retry-period=%s < --leader-elect-renew-deadline=%s < --leader-elect-lease-duration=%s must hold",
			o.RetryPeriod, o.RenewDeadline, o.LeaseDuration)
	}
	if o.TLS, err = ParseTLSOptions(f.TLSMinVersion, splitList(f.TLSCiphers)); err != nil {
		return o, nil, fmt.Errorf("--tls-min-version/--tls-cipher-suites: %w", err)
	}
	o.Endpoint = Endpoint{ServiceNamespace: o.Namespace, URLBase: f.WebhookURL}
	cfg, err := clientcmd.BuildConfigFromFlags("", f.Kubeconfig)
	if err != nil {
		return o, nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	return o, cfg, nil
}

// splitList reads a comma-separated flag value ("" is none).
func splitList(v string) []string {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// onOff reads an all|none switch; it returns true for none (switched off).
func onOff(flag, v string) (bool, error) {
	switch v {
	case "all":
		return false, nil
	case "none":
		return true, nil
	}
	return false, fmt.Errorf("%s=%q: want all or none", flag, v)
}
