// Package cli holds what every multislice command shares: its I/O streams
// and the way it finds the local cluster. Each command lives in its own
// sub-package with an options struct and a run function tests call directly.
package cli

import (
	"fmt"
	"io"
	"os"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/multislice/multislice/internal/sim/localcluster"
)

// Factory gives commands their streams and the local cluster.
type Factory struct {
	Out, Err io.Writer
	// HomeDir overrides $MULTISLICE_HOME (tests).
	HomeDir string
}

// NewFactory uses the process's stdout and stderr.
func NewFactory() *Factory { return &Factory{Out: os.Stdout, Err: os.Stderr} }

// Home is the local cluster's directory.
func (f *Factory) Home() (localcluster.Home, error) {
	if f.HomeDir != "" {
		return localcluster.Home(f.HomeDir), nil
	}
	return localcluster.DefaultHome()
}

// WorkloadConfig is the cluster that workload commands talk to: the one
// $KUBECONFIG names, else the local cluster.
func (f *Factory) WorkloadConfig() (*rest.Config, error) {
	if os.Getenv("KUBECONFIG") != "" {
		return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{}).ClientConfig()
	}
	_, cfg, err := f.Client()
	return cfg, err
}

// Client connects to the local cluster as its admin.
func (f *Factory) Client() (kubernetes.Interface, *rest.Config, error) {
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
