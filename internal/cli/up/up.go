// Package up implements `multislice up`: a local control plane with a
// simulated TPU fleet, left running in the background.
package up

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/features"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/install"
	"github.com/multislice/multislice/internal/sim/cloud"
	"github.com/multislice/multislice/internal/sim/fleet"
	"github.com/multislice/multislice/internal/sim/localcluster"
)

// Options are the flags of `multislice up`.
type Options struct {
	FleetFile     string
	APIServerPort int
	Timeout       time.Duration
	// NoManager leaves the Multislice manager out (a plain control plane,
	// e.g. to measure what upstream behaviour alone does).
	NoManager bool
	// FeatureGates are passed to the manager, e.g. RestartJob=true.
	FeatureGates string
	// RepairDelay is how long the simulated cloud takes to recreate a broken slice.
	RepairDelay time.Duration
}

// NewCmdUp is `multislice up`.
func NewCmdUp(f *cli.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a local cluster with a simulated TPU fleet",
		Long: `Start etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok on
127.0.0.1, create the simulated TPU fleet, wait until every node is Ready, and
leave the cluster running in the background. State, kubeconfig and one log per
component live in $MULTISLICE_HOME (default ~/.multislice).

The default fleet is the seed's: multislice group multislice-group-1 of four
tpu-v4-podslice 2x2x2 pools (v4-16: two hosts of four chips) plus a spare pool,
a CPU pool, and spare capacity for two more slices. Print it with
--print-default-fleet; pass your own with --fleet.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if ok, _ := cmd.Flags().GetBool("print-default-fleet"); ok {
				_, err := f.Out.Write(fleet.DefaultYAML())
				return err
			}
			return Run(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.FleetFile, "fleet", "", "fleet config file (default: the seed's fleet)")
	cmd.Flags().IntVar(&opts.APIServerPort, "apiserver-port", 0, "port of kube-apiserver on 127.0.0.1 (0 picks a free one)")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 3*time.Minute, "give up if the fleet is not Ready by then")
	cmd.Flags().Bool("print-default-fleet", false, "print the default fleet config and exit")
	cmd.Flags().DurationVar(&opts.RepairDelay, "repair-delay", 10*time.Second, "time the simulated cloud takes to recreate a broken slice")
	cmd.Flags().StringVar(&opts.FeatureGates, "feature-gates", "", "feature gates of the Multislice manager, e.g. RestartJob=true,ElasticJobSet=true (see `multislice manager --help`)")
	cmd.Flags().BoolVar(&opts.NoManager, "no-manager", false, "do not install the JobSet CRD or start the Multislice manager")
	return cmd
}

// Run starts the cluster and provisions the fleet.
func Run(ctx context.Context, f *cli.Factory, opts *Options) error {
	if _, err := features.Parse(opts.FeatureGates); err != nil {
		return err
	}
	if opts.APIServerPort < 0 || opts.APIServerPort > 65535 {
		return fmt.Errorf("--apiserver-port %d: must be 1 to 65535 (0 picks a free one)", opts.APIServerPort)
	}
	if err := cloud.CheckRepairDelay("--repair-delay", opts.RepairDelay); err != nil {
		return err
	}
	if opts.Timeout < time.Second || opts.Timeout > time.Hour {
		return fmt.Errorf("--timeout=%s: want 1s to 1h", opts.Timeout)
	}
	cfg := fleet.Default()
	if opts.FleetFile != "" {
		var err error
		if cfg, err = fleet.Load(opts.FleetFile); err != nil {
			return err
		}
	}
	pools, err := cfg.Expand()
	if err != nil {
		return err
	}
	home, err := f.Home()
	if err != nil {
		return err
	}
	began := time.Now()
	fmt.Fprintf(f.Out, "Starting a local multislice cluster in %s\n", home)
	running, err := localcluster.Start(ctx, localcluster.StartOptions{
		Home: home, Binaries: localcluster.FindBinaries(), APIServerPort: opts.APIServerPort, Progress: f.Out,
		BeforeControllers: func(ctx context.Context, r *localcluster.Running) error {
			if opts.NoManager {
				return nil
			}
			fmt.Fprintln(f.Out, "installing the JobSet CRD and the manager's permissions")
			if err := install.CRD(ctx, r.Config); err != nil {
				return err
			}
			return install.ManagerRBAC(ctx, r.Config, install.Namespace, localcluster.ManagerUser)
		},
	})
	if errors.Is(err, localcluster.ErrAlreadyRunning) {
		healed, healErr := localcluster.Heal(home)
		for _, name := range healed {
			fmt.Fprintf(f.Out, "restarted %s (log: %s)\n", name, home.Log(name))
		}
		if healErr != nil {
			return healErr
		}
		fmt.Fprintln(f.Out, err)
		return nil
	}
	if err != nil {
		return interrupted(ctx, err)
	}
	controlPlane := time.Since(began)
	if err := provision(ctx, f.Out, running, cfg, pools, opts); err != nil || ctx.Err() != nil {
		running.Stop()
		return interrupted(ctx, err)
	}
	total := time.Since(began)
	nodes := 0
	for _, p := range pools {
		nodes += p.Nodes
	}
	fmt.Fprintf(f.Out, "\nCluster ready: control plane in %.1fs, fleet of %d nodes Ready in %.1fs (total %.1fs).\n",
		controlPlane.Seconds(), nodes, (total - controlPlane).Seconds(), total.Seconds())
	fmt.Fprintf(f.Out, `
Use it:
  export KUBECONFIG=%s
  kubectl get nodes -L %s,%s
  multislice nodepool status -l %s=multislice-group-1
  multislice status        components, memory and fleet
Stop it:
  multislice down
`, home.Kubeconfig(), gke.NodePoolLabel, gke.TopologyLabel, cfg.Keys().Name)
	return nil
}

// interrupted says plainly that a signal stopped `up` (the half-started
// cluster has been stopped by then) instead of "context canceled".
func interrupted(ctx context.Context, err error) error {
	if ctx.Err() == nil {
		return err
	}
	return errors.New("interrupted: stopped everything this `up` had started")
}

func provision(ctx context.Context, out io.Writer, r *localcluster.Running, cfg *fleet.Config, pools []fleet.Resolved, opts *Options) error {
	c, err := cloud.Init(ctx, r.Client, cloud.Settings{GroupLabels: cfg.Keys(), Quota: cfg.Quota(pools)})
	if err != nil {
		return err
	}
	if err := install.PriorityClasses(ctx, r.Client); err != nil {
		return err
	}
	// The manager and the repairer are this same binary in other roles.
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if !opts.NoManager {
		if err := r.StartManager(ctx, exe, opts.FeatureGates); err != nil {
			return err
		}
	}
	want := 0
	for _, p := range pools {
		want += p.Nodes
	}
	fmt.Fprintf(out, "creating the fleet: %d node pools, %d nodes\n", len(pools), want)
	if err := c.Provision(ctx, pools); err != nil {
		return err
	}
	if err := r.StartRepairer(exe, opts.RepairDelay); err != nil {
		return err
	}
	if err := r.StartSimAgents(exe); err != nil {
		return err
	}
	ready := 0
	err = r.WaitFor(ctx, "kwok", opts.Timeout, func(ctx context.Context) (bool, error) {
		nodes, err := r.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err
		}
		ready = 0
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
	// Pods cannot be created before the default ServiceAccount exists.
	return r.WaitFor(ctx, "kube-controller-manager", opts.Timeout, func(ctx context.Context) (bool, error) {
		_, err := r.Client.CoreV1().ServiceAccounts(corev1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
}
