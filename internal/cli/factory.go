// Package cli holds what the multislice CLI's commands share: their streams
// (program.Streams) and the way they find a cluster, the local one or the
// one kubectl's flags name. Each command lives in its own sub-package with
// an options struct and a run function tests call directly.
package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"
	"golang.org/x/term"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/multislice/multislice/internal/cli/program"
	"github.com/multislice/multislice/internal/home"
	"github.com/multislice/multislice/internal/objcache"
)

// Factory gives commands their streams and the local cluster.
type Factory struct {
	program.Streams
	// HomeDir overrides $MULTISLICE_HOME (tests).
	HomeDir string
	// ObjectClient, when set, is the client the workload commands use
	// (tests give a fake); else one is built for WorkloadConfig.
	ObjectClient client.Client
	// WorkloadClient, when set, is Clientset's answer (tests give a fake).
	WorkloadClient kubernetes.Interface
	// LocalClient, when set, is the local cluster's admin client (tests
	// give a fake); else Client builds one from the home's kubeconfig.
	LocalClient kubernetes.Interface
	// ClientFlags are kubectl's client flags from k8s.io/cli-runtime
	// (--kubeconfig, --context, --as, --server, --token,
	// --certificate-authority, ...): the cluster the workload commands
	// (workload, status JOBSET, logs, dashboard) talk to instead of the
	// local one. nil: none given.
	ClientFlags *genericclioptions.ConfigFlags
}

// NewClientFlags are kubectl's client flags less -n, which each command
// that takes a namespace defines itself; read afresh on each use.
func NewClientFlags() *genericclioptions.ConfigFlags {
	c := genericclioptions.NewConfigFlags(false)
	c.Namespace = nil
	return c
}

// BindClientFlags defines kubectl's client flags on fl (the root's
// persistent flags).
func (f *Factory) BindClientFlags(fl *pflag.FlagSet) {
	if f.ClientFlags == nil {
		f.ClientFlags = NewClientFlags()
	}
	f.ClientFlags.AddFlags(fl)
}

// external: a cluster was named (a client flag, $KUBECONFIG), so
// workload commands read the kubeconfig kubectl would rather than take the
// local cluster's admin client.
func (f *Factory) external() bool {
	if os.Getenv("KUBECONFIG") != "" {
		return true
	}
	c := f.ClientFlags
	if c == nil {
		return false
	}
	for _, v := range []*string{c.KubeConfig, c.Context, c.ClusterName, c.AuthInfoName, c.Impersonate, c.ImpersonateUID,
		c.APIServer, c.BearerToken, c.CAFile, c.CertFile, c.KeyFile, c.Username} {
		if v != nil && *v != "" {
			return true
		}
	}
	return c.ImpersonateGroup != nil && len(*c.ImpersonateGroup) > 0
}

// clientConfig is kubectl's reading of the kubeconfig and its client
// flags when a cluster was named, else the local cluster's kubeconfig.
func (f *Factory) clientConfig() clientcmd.ClientConfig {
	if f.external() && f.ClientFlags != nil {
		return f.ClientFlags.ToRawKubeConfigLoader()
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if !f.external() {
		if h, err := f.Home(); err == nil {
			rules.ExplicitPath = h.Kubeconfig()
		}
	}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
}

// Namespace is ns when given (-n), else the context's namespace, as kubectl
// chooses it, else "default".
func (f *Factory) Namespace(ns string) string {
	if ns != "" {
		return ns
	}
	if n, _, err := f.clientConfig().Namespace(); err == nil && n != "" {
		return n
	}
	return corev1.NamespaceDefault
}

// NewFactory writes to s.
func NewFactory(s program.Streams) *Factory {
	return &Factory{Streams: s, ClientFlags: NewClientFlags()}
}

// Home is the multislice home: the local cluster's directory.
func (f *Factory) Home() (home.Dir, error) {
	if f.HomeDir != "" {
		return home.Dir(f.HomeDir), nil
	}
	return home.Default()
}

// WorkloadConfig is the cluster that workload commands talk to: the one
// --kubeconfig, --context or $KUBECONFIG names, else the local cluster.
func (f *Factory) WorkloadConfig() (*rest.Config, error) {
	if f.external() {
		return f.clientConfig().ClientConfig()
	}
	_, cfg, err := f.Client()
	return cfg, err
}

// Objects is a client of the cluster workload commands talk to, typed for
// the built-in kinds and JobSets.
func (f *Factory) Objects() (client.Client, error) {
	if f.ObjectClient != nil {
		return f.ObjectClient, nil
	}
	cfg, err := f.WorkloadConfig()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: objcache.Scheme()})
}

// Clientset is a typed client of the cluster workload commands talk to
// (pods, their logs).
func (f *Factory) Clientset() (kubernetes.Interface, error) {
	if f.WorkloadClient != nil {
		return f.WorkloadClient, nil
	}
	cfg, err := f.WorkloadConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// Client connects to the local cluster as its admin (with LocalClient set,
// it is that client and no config).
func (f *Factory) Client() (kubernetes.Interface, *rest.Config, error) {
	if f.LocalClient != nil {
		return f.LocalClient, nil, nil
	}
	h, err := f.Home()
	if err != nil {
		return nil, nil, err
	}
	if _, err := os.Stat(h.Kubeconfig()); err != nil {
		return nil, nil, fmt.Errorf("no local cluster in %s: start one with `multislice up`", h)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", h.Kubeconfig())
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", h.Kubeconfig(), err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	client, err := kubernetes.NewForConfig(cfg)
	return client, cfg, err
}

// IsTerminal: w is a terminal (not a pipe or a file), so that a command may
// redraw it.
func IsTerminal(w io.Writer) bool {
	file, ok := w.(*os.File)
	return ok && term.IsTerminal(int(file.Fd()))
}
