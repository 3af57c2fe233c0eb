// Package hidden holds the commands a person does not type: the local
// cluster's own processes (cloud-repair, sim-agents, registry), which `multislice up`
// starts with the flags their options render.
package hidden

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/localcluster"
	"github.com/multislice/multislice/internal/localcluster/realhost"
	"github.com/multislice/multislice/internal/localcluster/sim"
	"github.com/multislice/multislice/internal/localcluster/sim/cloud"
	"github.com/multislice/multislice/internal/outage"
)

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
	if o.Flags.NodeLease <= 0 {
		return fmt.Errorf("--node-lease=%s: want the positive lease of the fleet's nodes (multislice up sets it)", o.Flags.NodeLease)
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
	return (&cloud.Repairer{Cloud: c, Delay: delay, NodeLease: o.Flags.NodeLease, Log: o.F.Out}).Run(ctx)
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
