// Package benchcluster starts a local cluster for a benchmark program: the
// built multislice binary in a temporary $MULTISLICE_HOME, with clients.
package benchcluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/multislice/multislice/internal/manager"
)

// Cluster is a running local cluster.
type Cluster struct {
	Home, Bin string
	Config    *rest.Config
	Client    kubernetes.Interface
	Objects   client.Client // also knows JobSets
	// Env is added to every multislice invocation (e.g. MULTISLICE_MANAGER_ARGS=...).
	Env []string
}

// Up runs `multislice up upArgs...` with the binaries in bin; fleet, when
// not empty, is written to a file and passed with --fleet. Call Down after.
func Up(bin, fleet string, env []string, upArgs ...string) (*Cluster, error) {
	abs, err := filepath.Abs(bin)
	if err != nil {
		return nil, err
	}
	home, err := os.MkdirTemp("", "multislice-bench-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Home: home, Bin: abs, Env: env}
	args := append([]string{"up"}, upArgs...)
	if fleet != "" {
		path := filepath.Join(home, "fleet.yaml")
		if err := os.WriteFile(path, []byte(fleet), 0o644); err != nil {
			return nil, err
		}
		args = append(args, "--fleet", path)
	}
	if out, err := c.Run(args...); err != nil {
		c.Down()
		return nil, fmt.Errorf("up: %v\n%s", err, out)
	}
	if c.Config, err = clientcmd.BuildConfigFromFlags("", filepath.Join(home, "kubeconfig")); err != nil {
		c.Down()
		return nil, err
	}
	c.Config.QPS, c.Config.Burst = 1000, 2000
	c.Client = kubernetes.NewForConfigOrDie(c.Config)
	if c.Objects, err = client.New(c.Config, client.Options{Scheme: manager.Scheme()}); err != nil {
		c.Down()
		return nil, err
	}
	return c, nil
}

// Run runs multislice against the cluster.
func (c *Cluster) Run(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(c.Bin, "multislice"), args...)
	cmd.Env = append(append(os.Environ(), "MULTISLICE_HOME="+c.Home, "MULTISLICE_BIN_DIR="+c.Bin), c.Env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Down stops the cluster and removes its home.
func (c *Cluster) Down() {
	_, _ = c.Run("down")
	_ = os.RemoveAll(c.Home)
}
