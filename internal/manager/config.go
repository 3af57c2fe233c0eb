package manager

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/multislice/multislice/internal/features"
)

// Upstream JobSet's configuration file (`jobset-controller --config`, the
// manager-config ConfigMap): its API version and kind.
const (
	ConfigAPIVersion = "config.jobset.x-k8s.io/v1alpha1"
	ConfigKind       = "Configuration"
)

// upstreamLeaseName is the lease upstream's configuration names by default.
const upstreamLeaseName = "6d4f6a47.jobset.x-k8s.io"

// upstreamConfig is the wire format of upstream's Configuration, every
// field it has: a field not here is refused by the strict decoding.
type upstreamConfig struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Webhook    struct {
		Port    *int   `json:"port,omitempty"`
		Host    string `json:"host,omitempty"`
		CertDir string `json:"certDir,omitempty"`
	} `json:"webhook,omitempty"`
	LeaderElection *struct {
		LeaderElect       *bool            `json:"leaderElect,omitempty"`
		LeaseDuration     *metav1.Duration `json:"leaseDuration,omitempty"`
		RenewDeadline     *metav1.Duration `json:"renewDeadline,omitempty"`
		RetryPeriod       *metav1.Duration `json:"retryPeriod,omitempty"`
		ResourceLock      string           `json:"resourceLock,omitempty"`
		ResourceName      string           `json:"resourceName,omitempty"`
		ResourceNamespace string           `json:"resourceNamespace,omitempty"`
	} `json:"leaderElection,omitempty"`
	Metrics struct {
		BindAddress string `json:"bindAddress,omitempty"`
		CertDir     string `json:"certDir,omitempty"`
	} `json:"metrics,omitempty"`
	Health struct {
		HealthProbeBindAddress string `json:"healthProbeBindAddress,omitempty"`
		ReadinessEndpointName  string `json:"readinessEndpointName,omitempty"`
		LivenessEndpointName   string `json:"livenessEndpointName,omitempty"`
	} `json:"health,omitempty"`
	TLS *struct {
		MinVersion   string   `json:"minVersion,omitempty"`
		CipherSuites []string `json:"cipherSuites,omitempty"`
	} `json:"tls,omitempty"`
	InternalCertManagement *struct {
		Enable             *bool   `json:"enable,omitempty"`
		WebhookServiceName *string `json:"webhookServiceName,omitempty"`
		WebhookSecretName  *string `json:"webhookSecretName,omitempty"`
	} `json:"internalCertManagement,omitempty"`
	ClientConnection *struct {
		QPS   *float32 `json:"qps,omitempty"`
		Burst *int32   `json:"burst,omitempty"`
	} `json:"clientConnection,omitempty"`
	FeatureGates map[string]bool `json:"featureGates,omitempty"`
}

// ApplyConfigFile reads f.Config, upstream's Configuration, into the flags
// fl has not been given on the command line (a flag wins over the file, as
// in Kubernetes' own components). A field Multislice does not support, or
// a value it cannot honour, is refused with its name.
func (f *Flags) ApplyConfigFile(fl *pflag.FlagSet) error {
	if f.Config == "" {
		return nil
	}
	data, err := os.ReadFile(f.Config)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	if err := f.applyConfig(data, fl.Changed); err != nil {
		return fmt.Errorf("--config %s: %w", f.Config, err)
	}
	return nil
}

// applyConfig maps each field of an upstream Configuration onto the flag
// that does the same, unless given flagged is true for that flag.
func (f *Flags) applyConfig(data []byte, given func(flag string) bool) error {
	var c upstreamConfig
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return err
	}
	strict, err := sigsjson.UnmarshalStrict(js, &c, sigsjson.DisallowUnknownFields)
	if err == nil && len(strict) > 0 {
		err = strict[0] // it names the field with its path
	}
	if err != nil {
		return fmt.Errorf("%w (the fields of %s %s are upstream JobSet's)", err, ConfigAPIVersion, ConfigKind)
	}
	if c.APIVersion != ConfigAPIVersion || c.Kind != ConfigKind {
		return fmt.Errorf("apiVersion %q, kind %q: want %s, %s", c.APIVersion, c.Kind, ConfigAPIVersion, ConfigKind)
	}
	o := &f.Options
	set := func(flag string, apply func()) {
		if !given(flag) {
			apply()
		}
	}
	if c.Webhook.Port != nil {
		set("webhook-port", func() { o.WebhookPort = *c.Webhook.Port })
	}
	if c.Webhook.Host != "" {
		set("webhook-host", func() { o.WebhookHost = c.Webhook.Host })
	}
	if c.Webhook.CertDir != "" {
		set("cert-dir", func() { o.CertDir = c.Webhook.CertDir })
	}
	if le := c.LeaderElection; le != nil {
		if le.ResourceLock != "" && le.ResourceLock != "leases" {
			return fmt.Errorf("leaderElection.resourceLock %q: Multislice elects its leader with a Lease only; remove the field or set it to leases", le.ResourceLock)
		}
		if le.ResourceName != "" && le.ResourceName != upstreamLeaseName {
			return fmt.Errorf("leaderElection.resourceName %q: Multislice's replicas elect their leader on their own Lease (%s); remove the field", le.ResourceName, LeaseName)
		}
		if le.LeaderElect != nil {
			set("leader-elect", func() { o.LeaderElect = *le.LeaderElect })
		}
		for _, d := range []struct {
			flag string
			from *metav1.Duration
			to   *time.Duration
		}{{"leader-elect-lease-duration", le.LeaseDuration, &o.LeaseDuration}, {"leader-elect-renew-deadline", le.RenewDeadline, &o.RenewDeadline}, {"leader-elect-retry-period", le.RetryPeriod, &o.RetryPeriod}} {
			if d.from != nil {
				set(d.flag, func() { *d.to = d.from.Duration })
			}
		}
		if le.ResourceNamespace != "" {
			set("namespace", func() { o.Namespace = le.ResourceNamespace })
		}
	}
	if c.Metrics.CertDir != "" {
		return fmt.Errorf("metrics.certDir %q: Multislice serves /metrics with the certificate it manages for its webhooks; remove the field", c.Metrics.CertDir)
	}
	if c.Metrics.BindAddress != "" {
		set("metrics-bind-address", func() { o.MetricsAddr = c.Metrics.BindAddress })
	}
	if c.Health.HealthProbeBindAddress != "" {
		set("health-probe-bind-address", func() { o.ProbeAddr = c.Health.HealthProbeBindAddress })
	}
	for _, e := range []struct{ field, value, want string }{
		{"health.readinessEndpointName", c.Health.ReadinessEndpointName, "/readyz"},
		{"health.livenessEndpointName", c.Health.LivenessEndpointName, "/healthz"},
	} {
		if e.value != "" && "/"+strings.TrimPrefix(e.value, "/") != e.want {
			return fmt.Errorf("%s %q: Multislice serves %s only; remove the field", e.field, e.value, e.want)
		}
	}
	if t := c.TLS; t != nil {
		if t.MinVersion != "" {
			set("tls-min-version", func() { f.TLSMinVersion = t.MinVersion })
		}
		if len(t.CipherSuites) > 0 {
			set("tls-cipher-suites", func() { f.TLSCiphers = strings.Join(t.CipherSuites, ",") })
		}
	}
	if icm := c.InternalCertManagement; icm != nil {
		if icm.Enable != nil && !*icm.Enable {
			return fmt.Errorf("internalCertManagement.enable false: Multislice always manages its webhooks' certificate (in the Secret %s); remove the field", CertSecretName)
		}
		if icm.WebhookServiceName != nil && *icm.WebhookServiceName != WebhookServiceName {
			return fmt.Errorf("internalCertManagement.webhookServiceName %q: Multislice's webhook Service is %s (install.yaml); remove the field", *icm.WebhookServiceName, WebhookServiceName)
		}
		if icm.WebhookSecretName != nil && *icm.WebhookSecretName != CertSecretName {
			return fmt.Errorf("internalCertManagement.webhookSecretName %q: Multislice keeps its certificate in the Secret %s; remove the field", *icm.WebhookSecretName, CertSecretName)
		}
	}
	if cc := c.ClientConnection; cc != nil {
		if cc.QPS != nil {
			set("kube-api-qps", func() { o.QPS = *cc.QPS })
		}
		if cc.Burst != nil {
			set("kube-api-burst", func() { o.Burst = int(*cc.Burst) })
		}
	}
	if len(c.FeatureGates) > 0 {
		names := make([]string, 0, len(c.FeatureGates))
		for name := range c.FeatureGates {
			if !slices.Contains(features.Names(), name) {
				return fmt.Errorf("featureGates.%s: no such gate; Multislice's are %s", name, strings.Join(features.Names(), ", "))
			}
			names = append(names, name)
		}
		sort.Strings(names)
		var kv []string
		for _, name := range names {
			kv = append(kv, name+"="+strconv.FormatBool(c.FeatureGates[name]))
		}
		set("feature-gates", func() { f.Gates = strings.Join(kv, ",") })
	}
	return nil
}
