// Package chaos implements `multislice chaos`: fault injection into the
// simulated TPU cloud.
package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/multislice/multislice/internal/cli/localfleet"

	"github.com/spf13/cobra"

	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/localcluster"
	"github.com/multislice/multislice/internal/localcluster/sim/cloud"
)

// NewCmdChaos is `multislice chaos`.
func NewCmdChaos(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "chaos",
		Short: "Inject faults into the simulated TPU cloud: maintenance, preempt, fail-host, fail-pod, capacity",
		Long: `Inject a fault into one node pool (slice) of the local cluster's simulated cloud:
  maintenance  every host gets cloud.google.com/impending-node-termination and
               cloud.google.com/active-node-maintenance=ONGOING
  preempt      the whole slice disappears (spot preemption)
  fail-host    host 0 (--host N) of the slice goes NotReady (its kubelet stops)
  delete-host  host 0 (--host N) of the slice is deleted (hardware failure, VM gone)
  fail-pod     one Running pod on the slice exits with code 137 (killed)
  kill-worker  (real hosts) a worker's processes are SIGKILLed in its container
The simulated cloud then repairs the slice as GKE does: after the repair delay
(multislice up --repair-delay) the whole slice is torn down, when capacity
allows (see chaos capacity), and created anew ` + cloud.RecreateAfterText() + `.`,
	}
	for _, kind := range []string{cloud.FaultMaintenance, cloud.FaultPreempt, cloud.FaultHost, cloud.FaultDeleteHost, cloud.FaultPod} {
		cmd.AddCommand(NewCmdFault(f, kind, nil))
	}
	cmd.AddCommand(NewCmdCapacity(f, nil), newCmdKillWorker(f))
	return cmd
}

// FaultOptions is the command line of `chaos KIND` for one fault kind.
type FaultOptions struct {
	F    *cli.Factory
	Kind string
	Pool string
	Host int
	// LeadTime (maintenance): the notice comes this long before the
	// maintenance itself, as GKE's does.
	LeadTime time.Duration
}

// NewCmdFault is `chaos KIND`; runF (nil: faultRun) gets the options.
func NewCmdFault(f *cli.Factory, kind string, runF func(context.Context, *FaultOptions) error) *cobra.Command {
	o := &FaultOptions{F: f, Kind: kind}
	if runF == nil {
		runF = faultRun
	}
	cmd := &cobra.Command{
		Use:   kind + " --nodepool NAME",
		Short: "Inject a " + kind + " fault into a node pool",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Pool == "" {
				return fmt.Errorf("--nodepool is required: the slice to hit (see multislice nodepool list)")
			}
			return runF(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Pool, "nodepool", "", "node pool to hit")
	if kind == cloud.FaultHost || kind == cloud.FaultDeleteHost {
		cmd.Flags().IntVar(&o.Host, "host", 0, "the pool's host to hit, 0 to its hosts - 1")
	}
	if kind == cloud.FaultMaintenance {
		cmd.Flags().DurationVar(&o.LeadTime, "lead-time", 0, "give the maintenance notice (taint "+gke.ImpendingTerminationTaint+") this long before the maintenance starts, at most 1h; slice health moves the JobSet on the notice")
	}
	return cmd
}

func faultRun(ctx context.Context, o *FaultOptions) error {
	c, err := localfleet.OpenCloud(ctx, o.F, "multislice chaos "+o.Kind)
	if err != nil {
		return err
	}
	if home, err := localcluster.At(o.F.Home()); err == nil {
		c.StopKubelet = func(node string) error { return localcluster.StopComponent(home, localcluster.KubeletName(node)) }
	}
	if o.LeadTime < 0 || o.LeadTime > time.Hour {
		return fmt.Errorf("--lead-time %s: want 0 to 1h", o.LeadTime)
	}
	if o.LeadTime > 0 {
		if err := c.Notice(ctx, o.Pool); err != nil {
			return err
		}
		fmt.Fprintf(o.F.Out, "%s maintenance notice on %s; the maintenance starts in %s\n", stamp(), o.Pool, o.LeadTime)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(o.LeadTime):
		}
	}
	what, err := c.Inject(ctx, o.Kind, o.Pool, o.Host)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.F.Out, "%s %s\n", stamp(), what)
	return nil
}

// TimeLayout is the time of day, UTC, that opens each line chaos prints
// about a fault: when it was made, for tests and scripts timing what follows.
const TimeLayout = "15:04:05.000"

func stamp() string { return time.Now().UTC().Format(TimeLayout) }

// CapacityOptions is `chaos capacity`'s command line.
type CapacityOptions struct {
	F           *cli.Factory
	Accelerator string
	Unavailable int
}

// NewCmdCapacity is `chaos capacity`; runF (nil: capacityRun) gets the options.
func NewCmdCapacity(f *cli.Factory, runF func(context.Context, *CapacityOptions) error) *cobra.Command {
	o := &CapacityOptions{F: f}
	if runF == nil {
		runF = capacityRun
	}
	cmd := &cobra.Command{
		Use:   "capacity --accelerator tpu-v4-podslice --unavailable N",
		Short: "Take TPU hosts out of the cloud (N > 0) or give them back (N = 0): repairs wait for capacity",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runF(cmd.Context(), o) },
	}
	cmd.Flags().StringVar(&o.Accelerator, "accelerator", "tpu-v4-podslice", "cloud.google.com/gke-tpu-accelerator value")
	cmd.Flags().IntVar(&o.Unavailable, "unavailable", 0, "hosts the cloud cannot provide")
	return cmd
}

func capacityRun(ctx context.Context, o *CapacityOptions) error {
	c, err := localfleet.OpenCloud(ctx, o.F, "multislice chaos capacity")
	if err != nil {
		return err
	}
	if err := c.SetUnavailable(ctx, o.Accelerator, o.Unavailable); err != nil {
		return err
	}
	fmt.Fprintf(o.F.Out, "%d %s hosts unavailable\n", o.Unavailable, o.Accelerator)
	return nil
}
