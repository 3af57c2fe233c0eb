package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/multislice/multislice/internal/localcluster/realhost"
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

// Real hosts' binaries: built by hack/build-controlplane.sh like the rest.
func (b Binaries) Kubelet() string {
	return filepath.Join(b.Dir, "kubelet-"+versions.Kubernetes, "kubelet")
}
func (b Binaries) KubeProxy() string {
	return filepath.Join(b.Dir, "kubelet-"+versions.Kubernetes, "kube-proxy")
}
func (b Binaries) Containerd() string { return filepath.Join(b.containerdDir(), "containerd") }
func (b Binaries) Shim() string       { return filepath.Join(b.containerdDir(), "containerd-shim-runc-v2") }
func (b Binaries) CNIBin() string     { return filepath.Join(b.Dir, "cni-plugins-"+versions.CNIPlugins) }
func (b Binaries) CoreDNS() string {
	return filepath.Join(b.Dir, "coredns-"+versions.CoreDNS, "coredns")
}
func (b Binaries) containerdDir() string {
	return filepath.Join(b.Dir, "containerd-"+versions.Containerd)
}

// Runc is Debian's runc (hack/install-packages.sh installs it).
const Runc = "/usr/sbin/runc"

// EnvtestAssets is the directory for controller-runtime's KUBEBUILDER_ASSETS.
func (b Binaries) EnvtestAssets() string {
	return filepath.Join(b.Dir, "envtest-"+versions.Kubernetes+"-"+versions.Etcd)
}

// BuildScript is the script that builds the binaries, in the checkout
// whose bin/ Dir is ("" when Dir is not a checkout's bin/).
func (b Binaries) BuildScript() string {
	script := filepath.Join(filepath.Dir(b.Dir), "hack", "build-controlplane.sh")
	if filepath.Base(b.Dir) != "bin" {
		return ""
	}
	if _, err := os.Stat(script); err != nil {
		return ""
	}
	return script
}

// missingPart is the part of hack/build-controlplane.sh that builds what
// a cluster with real hosts and Kueue (as asked) lacks; "" when nothing.
func (b Binaries) missingPart(realHosts, kueue bool) string {
	missing := func(paths ...string) bool {
		for _, p := range paths {
			if _, err := os.Stat(p); err != nil {
				return true
			}
		}
		return false
	}
	needReal := realHosts && missing(b.Kubelet(), b.KubeProxy(), b.Containerd(), b.Shim(), filepath.Join(b.CNIBin(), "bridge"), b.CoreDNS())
	needKueue := kueue && missing(b.Kueue())
	switch {
	case needReal && needKueue:
		return "all"
	case needReal:
		return "real-hosts"
	case needKueue:
		return "kueue"
	case missing(b.Etcd(), b.APIServer(), b.Scheduler(), b.ControllerManager(), b.Kwok()):
		return "control-plane"
	}
	return ""
}

// BuildMissing builds, in a checkout, the binaries a cluster with real
// hosts and Kueue (as asked) lacks, the build's progress lines on
// progress: a newcomer's `make demo` builds only the control plane, and
// the first `up` with real hosts or --kueue builds the rest. Outside a
// checkout it builds nothing (Check then names what is missing).
func (b Binaries) BuildMissing(ctx context.Context, realHosts, kueue bool, progress io.Writer) error {
	part, script := b.missingPart(realHosts, kueue), b.BuildScript()
	if part == "" || script == "" {
		return nil
	}
	if progress == nil {
		progress = io.Discard
	}
	fmt.Fprintf(progress, "building what this cluster needs and %s lacks (%s; the first time only, minutes: each part says about how long)\n", b.Dir, part)
	cmd := exec.CommandContext(ctx, "bash", script, part)
	cmd.Dir = filepath.Dir(b.Dir)
	cmd.Stdout, cmd.Stderr = progress, progress
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build the missing binaries (%s %s): %w", script, part, err)
	}
	return nil
}

// Check reports every missing binary and how to build it; with realHosts,
// those of real hosts too.
func (b Binaries) Check(realHosts bool) error {
	var errs []error
	paths := []string{b.Etcd(), b.APIServer(), b.Scheduler(), b.ControllerManager(), b.Kwok()}
	if realHosts {
		paths = append(paths, b.Kubelet(), b.KubeProxy(), b.Containerd(), b.Shim(), filepath.Join(b.CNIBin(), "bridge"), b.CoreDNS())
		for _, p := range []string{Runc, realhost.Busybox} {
			if _, err := os.Stat(p); err != nil {
				errs = append(errs, fmt.Errorf("missing %s: install the Debian packages real hosts need with `make packages` (as root)", p))
			}
		}
	}
	for _, path := range paths {
		if _, err := os.Stat(path); err != nil {
			errs = append(errs, fmt.Errorf("missing %s", path))
		}
	}
	if len(errs) > 0 {
		build := "`make controlplane` (etcd, kube-*, kwok: about 15 minutes on two cores the first time; cached afterwards)"
		if realHosts {
			build = "`make binaries` (the control plane and real hosts' parts: about 27 minutes on two cores the first time; cached afterwards)"
		}
		return fmt.Errorf("%w\nbuild them with %s, or point MULTISLICE_BIN_DIR at a directory that has them", errors.Join(errs...), build)
	}
	return nil
}
