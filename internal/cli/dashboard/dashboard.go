// Package dashboard implements `multislice dashboard`: the live page of the
// fleet and the JobSets, served on the loopback.
package dashboard

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/dashboard"
	"github.com/multislice/multislice/internal/gke"
)

// Options is what `multislice dashboard` was asked.
type Options struct {
	F          *cli.Factory
	Address    string
	Port       int
	GroupLabel string
}

// NewCmdDashboard is `multislice dashboard`; runF (nil: dashboardRun) gets
// the options.
func NewCmdDashboard(f *cli.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{F: f}
	if runF == nil {
		runF = dashboardRun
	}
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve a live page of the fleet, the JobSets and their restarts (loopback; prints its URL)",
		Long: `Serve one live page: the fleet (multislice groups x node pools x hosts, coloured by
health and by the JobSet that holds them), every JobSet's slices x workers with
its conditions and restart timeline, and the queue of JobSets waiting for
capacity. The page follows the cluster through watches and updates itself.

It talks to the cluster $KUBECONFIG names, else to the local cluster. Anyone
who can reach the address sees the page: it listens on 127.0.0.1 unless told
otherwise. The manager can serve the same page (--dashboard-bind-address).`,
		Example: `  multislice dashboard              on a free port of 127.0.0.1
  multislice dashboard --port 8080`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runF(cmd.Context(), o) },
	}
	cmd.Flags().StringVar(&o.Address, "address", "127.0.0.1", "address to listen on")
	cmd.Flags().IntVar(&o.Port, "port", 0, "port to listen on (0: a free one)")
	cmd.Flags().StringVar(&o.GroupLabel, "group-label", gke.MultisliceGroupLabel, "node label naming a node pool's multislice group (a fleet's groupLabels.name)")
	return cmd
}

// Validate refuses a port out of range.
func (o *Options) Validate() error {
	if o.Port < 0 || o.Port > 65535 {
		return fmt.Errorf("--port %d: use 1-65535, or 0 for a free port", o.Port)
	}
	return nil
}

// dashboardRun serves the page until ctx ends.
func dashboardRun(ctx context.Context, o *Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	cfg, err := o.F.WorkloadConfig()
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(o.Address, strconv.Itoa(o.Port)))
	if err != nil {
		return fmt.Errorf("--address/--port: %w", err)
	}
	defer l.Close()
	s := &dashboard.Server{Config: cfg, Log: o.F.Err, GroupLabel: o.GroupLabel}
	if err := s.Start(ctx); err != nil {
		return err
	}
	fmt.Fprintf(o.F.Out, "dashboard: http://%s/\n", l.Addr())
	return s.Serve(ctx, l)
}
