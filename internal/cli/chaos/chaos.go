// Package chaos implements `multislice chaos`: fault injection into the
// simulated TPU cloud, and the hidden `multislice cloud-repair` loop that
// `multislice up` runs to heal slices as GKE does.
package chaos

import (
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
	"github.com/multislice/multislice/internal/outage"
	"github.com/multislice/multislice/internal/sim"
	"github.com/multislice/multislice/internal/sim/cloud"
	"github.com/multislice/multislice/internal/sim/localcluster"
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
		cmd.AddCommand(newCmdFault(f, kind))
	}
	cmd.AddCommand(newCmdCapacity(f), newCmdKillWorker(f))
	return cmd
}

func newCmdFault(f *cli.Factory, kind string) *cobra.Command {
	var pool string
	var host int
	cmd := &cobra.Command{
		Use:   kind + " --nodepool NAME",
		Short: "Inject a " + kind + " fault into a node pool",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if pool == "" {
				return fmt.Errorf("--nodepool is required: the slice to hit (see multislice nodepool list)")
			}
			c, err := open(cmd, f)
			if err != nil {
				return err
			}
			if home, err := localcluster.At(f.Home()); err == nil {
				c.StopKubelet = func(node string) error { return localcluster.StopComponent(home, localcluster.KubeletName(node)) }
			}
			what, err := c.Inject(cmd.Context(), kind, pool, host)
			if err != nil {
				return err
			}
			fmt.Fprintf(f.Out, "%s %s\n", time.Now().UTC().Format("15:04:05.000"), what)
			return nil
		},
	}
	cmd.Flags().StringVar(&pool, "nodepool", "", "node pool to hit")
	if kind == cloud.FaultHost || kind == cloud.FaultDeleteHost {
		cmd.Flags().IntVar(&host, "host", 0, "the pool's host to hit, 0 to its hosts - 1")
	}
	return cmd
}

func newCmdCapacity(f *cli.Factory) *cobra.Command {
	var accelerator string
	var hosts int
	cmd := &cobra.Command{
		Use:   "capacity --accelerator tpu-v4-podslice --unavailable N",
		Short: "Take TPU hosts out of the cloud (N > 0) or give them back (N = 0): repairs wait for capacity",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := open(cmd, f)
			if err != nil {
				return err
			}
			if err := c.SetUnavailable(cmd.Context(), accelerator, hosts); err != nil {
				return err
			}
			fmt.Fprintf(f.Out, "%d %s hosts unavailable\n", hosts, accelerator)
			return nil
		},
	}
	cmd.Flags().StringVar(&accelerator, "accelerator", "tpu-v4-podslice", "cloud.google.com/gke-tpu-accelerator value")
	cmd.Flags().IntVar(&hosts, "unavailable", 0, "hosts the cloud cannot provide")
	return cmd
}

func open(cmd *cobra.Command, f *cli.Factory) (*cloud.Cloud, error) {
	client, _, err := f.Client()
	if err != nil {
		return nil, err
	}
	return openWith(cmd, client)
}

func openWith(cmd *cobra.Command, client kubernetes.Interface) (*cloud.Cloud, error) {
	c, err := cloud.Open(cmd.Context(), client)
	if err != nil {
		return nil, err
	}
	c.Who = "multislice " + cmd.CommandPath()
	return c, nil
}

// NewCmdCloudRepair is the hidden `multislice cloud-repair`, one component
// of the local cluster.
func NewCmdCloudRepair(f *cli.Factory) *cobra.Command {
	var flags cloud.RepairFlags
	cmd := &cobra.Command{
		Use:    "cloud-repair",
		Short:  "Repair broken slices of the simulated cloud (run by multislice up)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			delay := flags.Delay
			if err := cloud.CheckRepairDelay("--delay", delay); err != nil {
				return err
			}
			cfg, err := componentConfig(f)
			if err != nil {
				return err
			}
			client, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			c, err := openWith(cmd, client)
			if err != nil {
				return err
			}
			fmt.Fprintf(f.Out, "repairing broken slices after %s\n", delay)
			return (&cloud.Repairer{Cloud: c, Delay: delay, Log: f.Out}).Run(cmd.Context())
		},
	}
	flags.Bind(cmd.Flags())
	return cmd
}

// NewCmdSimAgents is the hidden `multislice sim-agents`, one component of
// the local cluster: the in-place restart agent of every simulated pod.
func NewCmdSimAgents(f *cli.Factory) *cobra.Command {
	var flags sim.AgentsFlags
	cmd := &cobra.Command{
		Use:    "sim-agents",
		Short:  "Play the in-place restart agent and the kubelet's log endpoint of simulated pods (run by multislice up)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := componentConfig(f)
			if err != nil {
				return err
			}
			cfg.QPS, cfg.Burst = 500, 1000
			informers, err := sim.NewCache(cfg)
			if err != nil {
				return err
			}
			g, ctx := errgroup.WithContext(cmd.Context())
			g.Go(func() error { return informers.Start(ctx) })
			g.Go(func() error { return (&sim.Agents{Config: cfg, Cache: informers, Log: f.Out}).Run(ctx) })
			if egressPort := flags.EgressPort; egressPort != 0 {
				h, err := localcluster.At(f.Home())
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
			if addr := flags.APIServerRelay; addr != "" {
				u, err := url.Parse(cfg.Host)
				if err != nil {
					return err
				}
				l, err := net.Listen("tcp", addr)
				if err != nil {
					return fmt.Errorf("--apiserver-relay: %w", err)
				}
				g.Go(func() error { return sim.Relay(ctx, l, u.Host) })
			}
			return g.Wait()
		},
	}
	flags.Bind(cmd.Flags())
	return cmd
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
