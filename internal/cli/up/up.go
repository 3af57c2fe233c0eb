// Package up implements `multislice up`: a local control plane with a
// simulated TPU fleet, left running in the background.
package up

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/features"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/localcluster"
	"github.com/multislice/multislice/internal/localcluster/sim/cloud"
	"github.com/multislice/multislice/internal/localcluster/sim/fleet"
	"github.com/multislice/multislice/internal/versions"
)

// Options are the flags of `multislice up`.
type Options struct {
	F             *cli.Factory
	FleetFile     string
	APIServerPort int
	Timeout       time.Duration
	// NoManager leaves the Multislice manager out (a plain control plane,
	// e.g. to measure what upstream behaviour alone does).
	NoManager bool
	// Manager is where the manager runs: host or in-cluster.
	Manager string
	// FeatureGates are passed to the manager, e.g. RestartJob=true.
	FeatureGates string
	// Kueue runs Kueue beside the manager; KueuePodsReady is how long an
	// admitted JobSet may take to be running before Kueue evicts it.
	Kueue          bool
	KueuePodsReady time.Duration
	// KueueRecovery is Kueue's waitForPodsReady.recoveryTimeout (0: unset).
	KueueRecovery time.Duration
	// RepairDelay is how long the simulated cloud takes to recreate a broken slice.
	RepairDelay time.Duration
	// PrintDefaultFleet prints the default fleet instead of starting.
	PrintDefaultFleet bool
}

// NewCmdUp is `multislice up`; runF (nil: upRun) gets the options.
func NewCmdUp(f *cli.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f}
	if runF == nil {
		runF = upRun
	}
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
		RunE: func(cmd *cobra.Command, _ []string) error { return runF(cmd.Context(), opts) },
	}
	cmd.Flags().StringVar(&opts.FleetFile, "fleet", "", "fleet config file (default: the seed's fleet)")
	cmd.Flags().IntVar(&opts.APIServerPort, "apiserver-port", 0, "port of kube-apiserver on 127.0.0.1 (0 picks a free one)")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 3*time.Minute, "give up if the fleet is not Ready by then")
	cmd.Flags().BoolVar(&opts.PrintDefaultFleet, "print-default-fleet", false, "print the default fleet config and exit")
	cmd.Flags().DurationVar(&opts.RepairDelay, "repair-delay", 10*time.Second, "time from a fault to the simulated cloud tearing the broken slice down (it is created anew "+cloud.RecreateAfterText()+")")
	cmd.Flags().StringVar(&opts.FeatureGates, "feature-gates", "", "feature gates of the Multislice manager, e.g. RestartJob=true,ElasticJobSet=true (see `multislice manager --help`)")
	cmd.Flags().BoolVar(&opts.Kueue, "kueue", false, "also run Kueue ("+versions.Kueue+", its JobSet integration on); then `multislice kueue init` makes queues from the fleet")
	cmd.Flags().DurationVar(&opts.KueuePodsReady, "kueue-pods-ready-timeout", localcluster.KueuePodsReadyTimeout, "with --kueue: a JobSet Kueue admitted whose pods are not all ready by then (e.g. one placement cannot place) is evicted and requeued, giving its quota back (Kueue's waitForPodsReady)")
	cmd.Flags().DurationVar(&opts.KueueRecovery, "kueue-pods-ready-recovery-timeout", 0, "with --kueue: how long an admitted JobSet's pods, once all ready, may be not ready again (a restart) before Kueue evicts it (Kueue's waitForPodsReady.recoveryTimeout; 0: unset)")
	cmd.Flags().BoolVar(&opts.NoManager, "no-manager", false, "do not install the JobSet CRD or start the Multislice manager")
	cmd.Flags().StringVar(&opts.Manager, "manager", localcluster.ManagerOnHost, "where the manager runs: host (a process of this machine) or in-cluster (install.yaml applied: two replicas in pods on real hosts, from this binary's image pushed to the local registry; needs a fleet with a real CPU pool)")
	return cmd
}

// Validate refuses flags out of their bounds, naming the flag.
func (opts *Options) Validate() error {
	if _, err := features.Parse(opts.FeatureGates); err != nil {
		return err
	}
	if opts.APIServerPort < 0 || opts.APIServerPort > 65535 {
		return fmt.Errorf("--apiserver-port %d: must be 1 to 65535 (0 picks a free one)", opts.APIServerPort)
	}
	if err := cloud.CheckRepairDelay("--repair-delay", opts.RepairDelay); err != nil {
		return err
	}
	if opts.KueuePodsReady < 10*time.Second || opts.KueuePodsReady > 24*time.Hour {
		return fmt.Errorf("--kueue-pods-ready-timeout=%s: want 10s to 24h", opts.KueuePodsReady)
	}
	if opts.KueueRecovery != 0 && (opts.KueueRecovery < time.Second || opts.KueueRecovery > 24*time.Hour) {
		return fmt.Errorf("--kueue-pods-ready-recovery-timeout=%s: want 1s to 24h, or 0 to leave it unset", opts.KueueRecovery)
	}
	if opts.Timeout < time.Second || opts.Timeout > time.Hour {
		return fmt.Errorf("--timeout=%s: want 1s to 1h", opts.Timeout)
	}
	if opts.NoManager && opts.Manager != localcluster.ManagerOnHost {
		return fmt.Errorf("--no-manager and --manager=%s: choose one", opts.Manager)
	}
	return nil
}

// upRun starts the cluster and provisions the fleet.
func upRun(ctx context.Context, opts *Options) error {
	f := opts.F
	if opts.PrintDefaultFleet {
		_, err := f.Out.Write(fleet.DefaultYAML())
		return err
	}
	if err := opts.Validate(); err != nil {
		return err
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
	if err := localcluster.CheckManager(opts.Manager, pools); err != nil {
		return err
	}
	home, err := localcluster.At(f.Home())
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Fprintf(f.Out, "Starting a local multislice cluster in %s\n", home)
	res, err := localcluster.Up(ctx, localcluster.UpOptions{
		Home: home, Binaries: localcluster.FindBinaries(), APIServerPort: opts.APIServerPort,
		Fleet: cfg, Pools: pools, Exe: exe,
		NoManager: opts.NoManager, Manager: opts.Manager, FeatureGates: opts.FeatureGates, Kueue: opts.Kueue, KueuePodsReady: opts.KueuePodsReady, KueueRecovery: opts.KueueRecovery, RepairDelay: opts.RepairDelay, Timeout: opts.Timeout,
		Progress: f.Out,
	})
	for _, name := range res.Healed {
		fmt.Fprintf(f.Out, "restarted %s (log: %s)\n", name, home.Log(name))
	}
	if err != nil {
		return interrupted(ctx, err)
	}
	if res.AlreadyRunning != nil {
		fmt.Fprintln(f.Out, res.AlreadyRunning)
		return nil
	}
	fmt.Fprintf(f.Out, "\nCluster ready: control plane in %.1fs, fleet of %d nodes Ready in %.1fs (total %.1fs).\n",
		res.ControlPlane.Seconds(), res.Nodes, (res.Total - res.ControlPlane).Seconds(), res.Total.Seconds())
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
