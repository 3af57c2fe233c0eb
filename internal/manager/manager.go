// Package manager runs every Multislice controller and webhook in one
// process: JobSet controller, JobSet admission webhooks, self-managed
// webhook certificates, leader election, health probes and metrics.
package manager

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"time"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/certs"
	jobsetcontroller "github.com/multislice/multislice/internal/controller/jobset"
	slicecontroller "github.com/multislice/multislice/internal/controller/slice"
	"github.com/multislice/multislice/internal/dashboard"
	"github.com/multislice/multislice/internal/features"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/metrics"
	"github.com/multislice/multislice/internal/objcache"
	"github.com/multislice/multislice/internal/outage"
	"github.com/multislice/multislice/internal/placement"
	"github.com/multislice/multislice/internal/podgroups"
	"github.com/multislice/multislice/internal/slicehealth"
	jobsetwebhook "github.com/multislice/multislice/internal/webhook/jobset"
	tpuwebhook "github.com/multislice/multislice/internal/webhook/tpu"
	"github.com/multislice/multislice/internal/workload"
)

// Options configure the manager; `multislice manager` maps flags onto them.
type Options struct {
	Namespace   string
	MetricsAddr string
	// MetricsSecure serves /metrics over HTTPS to authenticated, authorized
	// callers only (as upstream); the local cluster binds it to loopback instead.
	MetricsSecure bool
	PprofAddr     string
	ProbeAddr     string
	// DashboardAddr serves the dashboard's page ("" or "0": off). Every
	// replica serves it, leader or not; it has no authentication of its own.
	DashboardAddr string
	LeaderElect   bool
	// LeaseDuration, RenewDeadline and RetryPeriod time the leader election:
	// a killed leader is replaced within LeaseDuration plus about two
	// RetryPeriods (a standby notices the last renewal only at its next
	// poll, and takes over at the poll after the lease ran out).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	WebhookHost                               string
	WebhookPort                               int
	CertDir                                   string
	Endpoint                                  Endpoint
	FeatureGates                              features.Gates
	// TPUWebhook is auto, true or false: whether the TPU webhook injects
	// and validates; auto stands aside on GKE, whose own webhook does it.
	TPUWebhook string
	// NoControllers runs the webhooks alone; NoWebhooks runs the controllers
	// alone (upstream's integration suites run them apart).
	NoControllers, NoWebhooks bool
	Workers                   int
	QPS                       float32
	Burst                     int
	// GroupLabel and GroupSizeLabel name the multislice-group node labels.
	GroupLabel, GroupSizeLabel string
	// SliceGrace is how long a host may be NotReady before its slice fails.
	SliceGrace time.Duration
	// AgentTimeout bounds an in-place restart that makes no progress.
	AgentTimeout time.Duration
	// NoSliceHealth turns slice health off (upstream behaviour).
	NoSliceHealth bool
	// HotSwap lets a recovering JobSet take lower-priority JobSets' pools.
	HotSwap bool
	// TLS applies to the webhook and metrics servers.
	TLS TLSOptions
	// SkipNameValidation lets several managers run in one process (tests).
	SkipNameValidation bool
}

// tpuStandsAside decides, from --tpu-webhook and (for auto) the API
// server's version, whether the TPU webhook stands aside.
func tpuStandsAside(flag string, client kubernetes.Interface) (bool, error) {
	version := ""
	if flag == "auto" || flag == "" {
		v, err := client.Discovery().ServerVersion()
		if err != nil {
			return false, fmt.Errorf("--tpu-webhook=auto: read the API server's version: %w", err)
		}
		version = v.GitVersion
	}
	aside, err := standAside(flag, version)
	if aside && version != "" {
		ctrl.Log.Info("GKE cluster (" + version + "): the TPU webhook stands aside for GKE's own; --tpu-webhook=true overrides")
	}
	return aside, err
}

// standAside: false and auto-on-GKE stand aside; true never does.
func standAside(flag, serverVersion string) (bool, error) {
	switch flag {
	case "true":
		return false, nil
	case "false":
		return true, nil
	case "", "auto":
		return gke.IsGKE(serverVersion), nil
	}
	return false, fmt.Errorf("--tpu-webhook=%s: want auto, true or false", flag)
}

// durationOrNil leaves a zero duration to controller-runtime's default.
func durationOrNil(d time.Duration) *time.Duration {
	if d == 0 {
		return nil
	}
	return &d
}

// Run starts the manager and blocks until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, o Options) error {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = o.QPS, o.Burst
	outage.RideOut(cfg)
	// The cache's pod watches slimmed on the wire; one connection for the
	// cache and the writes, as before (everything else passes untouched).
	cfg.Wrap(objcache.SlimPodWatches)
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if o.FeatureGates.WorkloadAwareScheduling {
		if err := servesWorkloads(clientset.Discovery()); err != nil {
			return err
		}
	}
	var ca []byte
	if !o.NoWebhooks {
		ca, err = certs.Ensure(ctx, clientset, certOptions(o), time.Now())
		if err != nil {
			return err
		}
		if err := InstallWebhooks(ctx, clientset, o.Endpoint, ca); err != nil {
			return err
		}
	}
	webhookServer := webhook.NewServer(webhook.Options{Host: o.WebhookHost, Port: o.WebhookPort, CertDir: o.CertDir,
		TLSOpts: []func(*tls.Config){o.TLS.apply}})
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  objcache.Scheme(),
		Metrics:                 metricsOptions(o),
		HealthProbeBindAddress:  o.ProbeAddr,
		PprofBindAddress:        o.PprofAddr,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        LeaseName,
		LeaderElectionNamespace: o.Namespace,
		LeaseDuration:           durationOrNil(o.LeaseDuration),
		RenewDeadline:           durationOrNil(o.RenewDeadline),
		RetryPeriod:             durationOrNil(o.RetryPeriod),
		// A replica that stops (rollout, drain) hands the lease over at
		// once instead of letting it run out: it stops reconciling first.
		LeaderElectionReleaseOnCancel: true,
		WebhookServer:                 webhookServer,
		Controller:                    config.Controller{SkipNameValidation: ptr.To(o.SkipNameValidation)},
		Cache:                         cacheOptions(o.FeatureGates),
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	if !o.NoControllers {
		if err := addControllers(mgr, o); err != nil {
			return err
		}
	}
	if !o.NoWebhooks {
		if err := addWebhooks(mgr, clientset, o, ca); err != nil {
			return err
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	ready := healthz.Ping
	if !o.NoWebhooks {
		ready = mgr.GetWebhookServer().StartedChecker()
	}
	if err := mgr.AddReadyzCheck("webhook", ready); err != nil {
		return err
	}
	metrics.ReportJobSets(func(ctx context.Context) ([]api.JobSet, error) {
		var l api.JobSetList
		err := mgr.GetCache().List(ctx, &l, client.UnsafeDisableDeepCopy)
		return l.Items, err
	}, workload.State)
	if o.DashboardAddr != "" && o.DashboardAddr != "0" {
		if err := mgr.Add(dashboardRunnable{cfg: cfg, cache: mgr.GetCache(), addr: o.DashboardAddr, groupLabel: o.GroupLabel}); err != nil {
			return err
		}
	}
	return mgr.Start(ctx)
}

func metricsOptions(o Options) metricsserver.Options {
	m := metricsserver.Options{BindAddress: o.MetricsAddr, TLSOpts: []func(*tls.Config){o.TLS.apply}}
	if o.MetricsSecure {
		m.SecureServing, m.FilterProvider = true, authorizedMetrics
	}
	return m
}

// addControllers registers the JobSet controller, placement, slice health
// and, for dynamic slicing, the slice controller and (once Kueue is
// served) its admission check.
func addControllers(mgr ctrl.Manager, o Options) error {
	r := &jobsetcontroller.Reconciler{
		Client:         mgr.GetClient(),
		Recorder:       mgr.GetEventRecorder("jobset-controller"),
		CountsInterval: time.Second,
		Domains:        placement.NewCache(o.GroupLabel),
		GroupLabel:     o.GroupLabel,
		SizeLabel:      o.GroupSizeLabel,
		Gates:          o.FeatureGates,
		AgentTimeout:   o.AgentTimeout,
		HotSwap:        o.HotSwap,
		Events:         mgr.GetCache(),
	}
	if err := r.SetupWithManager(mgr, o.Workers); err != nil {
		return err
	}
	if o.FeatureGates.DynamicSlicing {
		if err := (&slicecontroller.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("slice-controller")}).SetupWithManager(mgr); err != nil {
			return err
		}
		d, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
		if err != nil {
			return err
		}
		if err := mgr.Add(&sliceCheckWhenKueue{mgr: mgr, discovery: d, every: 5 * time.Second}); err != nil {
			return err
		}
	}
	if o.NoSliceHealth {
		return nil
	}
	return (&slicehealth.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("slice-health"),
		Grace: o.SliceGrace, Slices: o.FeatureGates.DynamicSlicing}).SetupWithManager(mgr)
}

// addWebhooks registers the JobSet and TPU webhooks and keeps their certificate fresh.
func addWebhooks(mgr ctrl.Manager, clientset kubernetes.Interface, o Options, ca []byte) error {
	if err := (&jobsetwebhook.Webhook{Gates: o.FeatureGates, Classes: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return err
	}
	standAside, err := tpuStandsAside(o.TPUWebhook, clientset)
	if err != nil {
		return err
	}
	if err := (&tpuwebhook.JobWebhook{StandAside: standAside}).SetupWithManager(mgr); err != nil {
		return err
	}
	return mgr.Add(&certRenewer{client: clientset, options: o, bundle: ca})
}

func certOptions(o Options) certs.Options {
	svc := WebhookServiceName + "." + o.Namespace
	return certs.Options{
		Namespace: o.Namespace, SecretName: CertSecretName, Dir: o.CertDir,
		DNSNames: []string{WebhookServiceName, svc, svc + ".svc", svc + ".svc.cluster.local", "localhost"},
		IPs:      []net.IP{net.ParseIP("127.0.0.1")},
	}
}

// certRenewer reads the certificate Secret every minute: it renews the
// certificate before it expires, and a replica picks up what another
// renewed within a minute (the webhook server reloads changed files). The
// CA bundle is rewritten only when it changes.
type certRenewer struct {
	client  kubernetes.Interface
	options Options
	bundle  []byte // the CA bundle last installed
}

// NeedLeaderElection: every replica serves webhooks, so every replica
// keeps its certificate current.
func (c *certRenewer) NeedLeaderElection() bool { return false }

func (c *certRenewer) Start(ctx context.Context) error {
	wait.UntilWithContext(ctx, c.renew, time.Minute)
	return nil
}

// renew rewrites the certificate when it nears expiry, and the webhook
// configurations when its CA changed.
func (c *certRenewer) renew(ctx context.Context) {
	ca, err := certs.Ensure(ctx, c.client, certOptions(c.options), time.Now())
	if err == nil && !bytes.Equal(ca, c.bundle) {
		if err = InstallWebhooks(ctx, c.client, c.options.Endpoint, ca); err == nil {
			c.bundle = ca
		}
	}
	if err != nil && ctx.Err() == nil {
		ctrl.Log.Error(err, "renew webhook certificate")
	}
}

// dashboardRunnable serves the dashboard on every replica.
type dashboardRunnable struct {
	cfg *rest.Config
	// cache is the manager's: the page reads what the controllers read.
	cache      cache.Cache
	addr       string
	groupLabel string
}

func (d dashboardRunnable) NeedLeaderElection() bool { return false }

// Start serves the page until ctx ends. A dashboard that cannot start or
// stops serving says why in the log and ends alone: a runnable's error
// would stop the whole manager, controllers and webhooks with it.
func (d dashboardRunnable) Start(ctx context.Context) error {
	log := ctrl.Log.WithName("dashboard")
	l, err := net.Listen("tcp", d.addr)
	if err != nil {
		log.Error(err, "not serving the dashboard", "flag", "--dashboard-bind-address")
		return nil
	}
	defer l.Close()
	s := &dashboard.Server{Config: d.cfg, Cache: d.cache, Log: os.Stderr, GroupLabel: d.groupLabel}
	if err := s.Start(ctx); err != nil {
		log.Error(err, "not serving the dashboard")
		return nil
	}
	if err := s.Serve(ctx, l); err != nil {
		log.Error(err, "the dashboard stopped")
	}
	return nil
}

// servesWorkloads: the API server serves the Workload and PodGroup kinds
// that spec.scheduling makes (beta in Kubernetes 1.37, off by default).
func servesWorkloads(d discovery.DiscoveryInterface) error {
	gv := schedulingv1beta1.SchemeGroupVersion.String()
	list, err := d.ServerResourcesForGroupVersion(gv)
	found := map[string]bool{}
	if err == nil {
		for _, r := range list.APIResources {
			found[r.Name] = true
		}
	}
	if !found["workloads"] || !found["podgroups"] {
		return fmt.Errorf("--feature-gates=%s=true needs the API server to serve %s workloads and podgroups (%v): run kube-apiserver with --runtime-config=%s --feature-gates=%s, and kube-scheduler with the same gates (the local cluster does)",
			features.WorkloadAwareScheduling, gv, err, podgroups.RuntimeConfig, podgroups.KubernetesGates)
	}
	return nil
}

// cacheOptions: the shared selection, and spec.scheduling's kinds when its
// gate is on.
func cacheOptions(gates features.Gates) cache.Options {
	if gates.WorkloadAwareScheduling {
		return objcache.WithWorkloads(objcache.Options())
	}
	return objcache.Options()
}
