package localcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/multislice/multislice/internal/versions"
)

// Binaries locates the pinned control-plane binaries that
// hack/build-controlplane.sh caches under bin/, keyed by version.
type Binaries struct{ Dir string }

// FindBinaries looks in $MULTISLICE_BIN_DIR, then next to the running
// executable (make puts multislice in bin/), then in ./bin.
func FindBinaries() Binaries {
	if d := os.Getenv("MULTISLICE_BIN_DIR"); d != "" {
		return Binaries{Dir: d}
	}
	candidates := []string{"bin"}
	if exe, err := os.Executable(); err == nil {
		candidates = append([]string{filepath.Dir(exe)}, candidates...)
	}
	for _, d := range candidates {
		b := Binaries{Dir: d}
		if _, err := os.Stat(b.APIServer()); err == nil {
			abs, _ := filepath.Abs(d)
			return Binaries{Dir: abs}
		}
	}
	abs, _ := filepath.Abs("bin")
	return Binaries{Dir: abs}
}

func (b Binaries) kube(name string) string {
	return filepath.Join(b.Dir, "kubernetes-"+versions.Kubernetes, name)
}

// APIServer, Scheduler, ControllerManager, Etcd and Kwok are binary paths.
func (b Binaries) APIServer() string         { return b.kube("kube-apiserver") }
func (b Binaries) Scheduler() string         { return b.kube("kube-scheduler") }
func (b Binaries) ControllerManager() string { return b.kube("kube-controller-manager") }
func (b Binaries) Etcd() string              { return filepath.Join(b.Dir, "etcd-"+versions.Etcd, "etcd") }
func (b Binaries) Kwok() string              { return filepath.Join(b.Dir, "kwok-"+versions.Kwok, "kwok") }

// EnvtestAssets is the directory for controller-runtime's KUBEBUILDER_ASSETS.
func (b Binaries) EnvtestAssets() string {
	return filepath.Join(b.Dir, "envtest-"+versions.Kubernetes+"-"+versions.Etcd)
}

// Check reports every missing binary and how to build it.
func (b Binaries) Check() error {
	var errs []error
	for _, path := range []string{b.Etcd(), b.APIServer(), b.Scheduler(), b.ControllerManager(), b.Kwok()} {
		if _, err := os.Stat(path); err != nil {
			errs = append(errs, fmt.Errorf("missing %s", path))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w\nbuild the pinned control plane with `make binaries` (about 7 minutes the first time; cached afterwards), or point MULTISLICE_BIN_DIR at a directory that has them",
			errors.Join(errs...))
	}
	return nil
}
