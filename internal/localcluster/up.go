package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/install"
	"github.com/multislice/multislice/internal/localcluster/sim"
	"github.com/multislice/multislice/internal/localcluster/sim/cloud"
	"github.com/multislice/multislice/internal/localcluster/sim/fleet"
)

// UpOptions is a whole local cluster: the control plane, Multislice's
// components and the simulated fleet.
type UpOptions struct {
	Home          Home
	Binaries      Binaries
	APIServerPort int // 0 picks a free one
	Fleet         *fleet.Config
	Pools         []fleet.Resolved // Fleet, expanded and checked
	// Exe is the multislice binary: the manager, the simulated cloud's
	// repairer and the simulated agents are it in other roles.
	Exe string
	// NoManager leaves the JobSet CRD and the manager out; Manager says
	// where it runs otherwise (ManagerOnHost, ManagerInCluster).
	NoManager    bool
	Manager      string
	FeatureGates string // the manager's
	// Kueue runs Kueue as a component, with its JobSet integration;
	// KueuePodsReady is its waitForPodsReady timeout.
	Kueue          bool
	KueuePodsReady time.Duration
	// KueueRecovery is its waitForPodsReady.recoveryTimeout (0: unset).
	KueueRecovery time.Duration
	RepairDelay   time.Duration // the simulated cloud's
	Timeout       time.Duration // for the fleet to be Ready
	Progress      io.Writer
}

// UpResult is what Up did.
type UpResult struct {
	// Healed are the components Up restarted on a cluster that was
	// already running (then nothing else was started).
	Healed         []string
	AlreadyRunning error
	// ControlPlane and Total are the times to a serving API and to a
	// Ready fleet; Nodes is the fleet's size.
	ControlPlane, Total time.Duration
	Nodes               int
}

// Up brings up a local cluster in its one order: the control plane (with
// the JobSet CRD and the permissions of the manager and the in-place
// restart agent installed before the controllers start), the simulated
// cloud, the manager, the fleet (the real hosts' bridge, registry, DNS,
// containerds and kubelets among it), the repairer and the simulated agents;
// it returns once every node is Ready and pods can be created. On a
// cluster already running in Home it restarts what has stopped instead.
// On failure it stops whatever it started.
func Up(ctx context.Context, o UpOptions) (UpResult, error) {
	began := time.Now()
	var res UpResult
	if err := o.Binaries.BuildMissing(ctx, len(RealHostNames(o.Pools)) > 0, o.Kueue, o.Progress); err != nil {
		return res, err
	}
	if o.Kueue {
		if _, err := os.Stat(o.Binaries.Kueue()); err != nil {
			return res, fmt.Errorf("missing %s: build Kueue with `make binaries`", o.Binaries.Kueue())
		}
	}
	r, err := Start(ctx, StartOptions{Home: o.Home, Binaries: o.Binaries, APIServerPort: o.APIServerPort, Progress: o.Progress,
		RealHosts: RealHostNames(o.Pools), NodeLease: sim.NodeLease(fleet.HostCount(o.Pools)),
		BeforeControllers: func(ctx context.Context, r *Running) error {
			if o.Kueue {
				if err := r.InstallKueue(ctx, o.Binaries); err != nil {
					return err
				}
			}
			if o.NoManager {
				return nil
			}
			r.say("installing the JobSet CRD, GKE's Slice CRD, the manager's permissions and the in-place restart agent's")
			if err := install.CRD(ctx, r.Config); err != nil {
				return err
			}
			if err := install.SliceCRD(ctx, r.Config); err != nil {
				return err
			}
			if o.Manager != ManagerInCluster { // install.yaml brings the in-cluster manager's
				if err := install.ManagerRBAC(ctx, r.Config, install.Namespace, ManagerUser); err != nil {
					return err
				}
			}
			return install.AgentRBAC(ctx, r.Config, corev1.NamespaceDefault)
		},
	})
	if errors.Is(err, ErrAlreadyRunning) {
		res.AlreadyRunning = err
		res.Healed, err = Heal(o.Home)
		return res, err
	}
	if err != nil {
		return res, err
	}
	res.ControlPlane = time.Since(began)
	if err := r.provision(ctx, o); err != nil || ctx.Err() != nil {
		r.Stop()
		if err == nil {
			err = ctx.Err()
		}
		return res, err
	}
	res.Total, res.Nodes = time.Since(began), fleet.HostCount(o.Pools)
	return res, nil
}

// provision starts Multislice's components and the fleet on a serving
// control plane, and waits until the fleet is Ready.
func (r *Running) provision(ctx context.Context, o UpOptions) error {
	c, err := cloud.Init(ctx, r.Client, cloud.Settings{GroupLabels: o.Fleet.Keys(), Quota: o.Fleet.Quota(o.Pools)})
	if err != nil {
		return err
	}
	if err := install.PriorityClasses(ctx, r.Client); err != nil {
		return err
	}
	if o.Kueue {
		if err := r.StartKueue(ctx, o.Binaries, o.KueuePodsReady, o.KueueRecovery); err != nil {
			return err
		}
	}
	if !o.NoManager && o.Manager != ManagerInCluster {
		if err := r.StartManager(ctx, o.Exe, o.FeatureGates, o.Fleet.Keys()); err != nil {
			return err
		}
	}
	want := fleet.HostCount(o.Pools)
	r.say("creating the fleet: %d node pools, %d nodes", len(o.Pools), want)
	if err := c.Provision(ctx, o.Pools); err != nil {
		return err
	}
	if err := r.startRealHosts(ctx, o); err != nil {
		return err
	}
	if err := r.StartRepairer(o.Exe, o.RepairDelay); err != nil {
		return err
	}
	if err := r.StartSimAgents(o.Exe); err != nil {
		return err
	}
	err = r.WaitFor(ctx, "kwok", o.Timeout, func(ctx context.Context) (bool, error) {
		nodes, err := r.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err
		}
		ready := 0
		for i := range nodes.Items {
			if gke.NodeReady(&nodes.Items[i]) {
				ready++
			}
		}
		return ready >= want, fmt.Errorf("%d of %d nodes Ready", ready, want)
	})
	if err != nil {
		return fmt.Errorf("fleet not Ready: %w", err)
	}
	if err := r.waitServices(ctx); err != nil {
		return err
	}
	if !o.NoManager && o.Manager == ManagerInCluster {
		if err := r.deployManager(ctx, o.Exe, o.Fleet.Keys(), o.FeatureGates, o.Timeout); err != nil {
			return fmt.Errorf("the manager in the cluster: %w", err)
		}
	}
	// Pods cannot be created before the default ServiceAccount exists.
	return r.WaitFor(ctx, "kube-controller-manager", o.Timeout, func(ctx context.Context) (bool, error) {
		_, err := r.Client.CoreV1().ServiceAccounts(corev1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
}
