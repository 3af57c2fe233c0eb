// Package chaos implements `multislice chaos`: fault injection into the
// simulated TPU cloud, and the hidden `multislice cloud-repair` loop that
// `multislice up` runs to heal slices as GKE does.
package chaos

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/cli/nodepool"
	"github.com/multislice/multislice/internal/localcluster"
	"github.com/multislice/multislice/internal/localcluster/realhost"
	"github.com/multislice/multislice/internal/localcluster/sim"
	"github.com/multislice/multislice/internal/localcluster/sim/cloud"
	"github.com/multislice/multislice/internal/outage"
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
(multislice up --repair-delay) the whole slice is torn down and created anew,
when capacity allows (see chaos capacity).`,
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
	return cmd
}

func faultRun(ctx context.Context, o *FaultOptions) error {
	c, err := nodepool.OpenCloud(ctx, o.F, "multislice chaos "+o.Kind)
	if err != nil {
		return err
	}
	if home, err := localcluster.At(o.F.Home()); err == nil {
		c.StopKubelet = func(node string) error { return localcluster.StopComponent(home, localcluster.KubeletName(node)) }
	}
	what, err := c.Inject(ctx, o.Kind, o.Pool, o.Host)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.F.Out, "%s %s\n", time.Now().UTC().Format("15:04:05.000"), what)
	return nil
}

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
	c, err := nodepool.OpenCloud(ctx, o.F, "multislice chaos capacity")
	if err != nil {
		return err
	}
	if err := c.SetUnavailable(ctx, o.Accelerator, o.Unavailable); err != nil {
		return err
	}
	fmt.Fprintf(o.F.Out, "%d %s hosts unavailable\n", o.Unavailable, o.Accelerator)
	return nil
}

// CloudRepairOptions is `multislice cloud-repair`'s command line.
type CloudRepairOptions struct {
	F     *cli.Factory
	Flags cloud.RepairFlags
}

// NewCmdCloudRepair is the hidden `multislice cloud-repair`, one component
// of the local cluster; runF (nil: cloudRepairRun) gets the options.
func NewCmdCloudRepair(f *cli.Factory, runF func(context.Context, *CloudRepairOptions) error) *cobra.Command {
	o := &CloudRepairOptions{F: f}
	if runF == nil {
		runF = cloudRepairRun
	}
	cmd := &cobra.Command{
		Use:    "cloud-repair",
		Short:  "Repair broken slices of the simulated cloud (run by multislice up)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE:   func(cmd *cobra.Command, _ []string) error { return runF(cmd.Context(), o) },
	}
	o.Flags.Bind(cmd.Flags())
	return cmd
}

// cloudRepairRun repairs broken slices until ctx ends.
func cloudRepairRun(ctx context.Context, o *CloudRepairOptions) error {
	delay := o.Flags.Delay
	if err := cloud.CheckRepairDelay("--delay", delay); err != nil {
		return err
	}
	cfg, err := componentConfig(o.F)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	c, err := cloud.Open(ctx, client, "multislice cloud-repair")
	if err != nil {
		return err
	}
	fmt.Fprintf(o.F.Out, "repairing broken slices after %s\n", delay)
	return (&cloud.Repairer{Cloud: c, Delay: delay, Log: o.F.Out}).Run(ctx)
}

// SimAgentsOptions is `multislice sim-agents`' command line.
type SimAgentsOptions struct {
	F     *cli.Factory
	Flags sim.AgentsFlags
}

// NewCmdSimAgents is the hidden `multislice sim-agents`, one component of
// the local cluster: the in-place restart agent of every simulated pod, its
// kubelet's log endpoint, and the removal of deleted pods kwok missed;
// runF (nil: simAgentsRun) gets the options.
func NewCmdSimAgents(f *cli.Factory, runF func(context.Context, *SimAgentsOptions) error) *cobra.Command {
	o := &SimAgentsOptions{F: f}
	if runF == nil {
		runF = simAgentsRun
	}
	cmd := &cobra.Command{
		Use:    "sim-agents",
		Short:  "Play the in-place restart agent, the kubelet's log endpoint and the removal kwok missed of simulated pods (run by multislice up)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE:   func(cmd *cobra.Command, _ []string) error { return runF(cmd.Context(), o) },
	}
	o.Flags.Bind(cmd.Flags())
	return cmd
}

// simAgentsRun plays the simulated pods' agents, kubelet log endpoint and
// reaper (and the API server relay, if asked) until ctx ends.
func simAgentsRun(ctx context.Context, o *SimAgentsOptions) error {
	cfg, err := componentConfig(o.F)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 500, 1000
	informers, err := sim.NewCache(cfg)
	if err != nil {
		return err
	}
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return informers.Start(ctx) })
	g.Go(func() error { return (&sim.Agents{Config: cfg, Cache: informers, Log: o.F.Out}).Run(ctx) })
	g.Go(func() error { return (&sim.Reaper{Config: cfg, Cache: informers, Log: o.F.Out}).Run(ctx) })
	if egressPort := o.Flags.EgressPort; egressPort != 0 {
		h, err := localcluster.At(o.F.Home())
		if err != nil {
			return err
		}
		tlsCfg, err := h.KubeletTLS()
		if err != nil {
			return err
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(egressPort)))
		if err != nil {
			return fmt.Errorf("--egress-port: %w", err)
		}
		g.Go(func() error { return (&sim.Kubelet{Pods: informers, TLS: tlsCfg}).Serve(ctx, l) })
	}
	if addr := o.Flags.APIServerRelay; addr != "" {
		u, err := url.Parse(cfg.Host)
		if err != nil {
			return err
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("--apiserver-relay: %w", err)
		}
		g.Go(func() error { return realhost.Relay(ctx, l, u.Host) })
	}
	return g.Wait()
}

// componentConfig is the local cluster's admin config for a component
// process, which waits out a control-plane outage instead of failing.
func componentConfig(f *cli.Factory) (*rest.Config, error) {
	_, cfg, err := f.Client()
	if err != nil {
		return nil, err
	}
	outage.RideOut(cfg)
	return cfg, nil
}
