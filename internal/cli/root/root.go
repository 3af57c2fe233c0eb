// Package root assembles the multislice command tree.
package root

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/cli/agent"
	"github.com/multislice/multislice/internal/cli/chaos"
	"github.com/multislice/multislice/internal/cli/dashboard"
	"github.com/multislice/multislice/internal/cli/down"
	"github.com/multislice/multislice/internal/cli/hidden"
	"github.com/multislice/multislice/internal/cli/image"
	"github.com/multislice/multislice/internal/cli/kueue"
	"github.com/multislice/multislice/internal/cli/logs"
	"github.com/multislice/multislice/internal/cli/manager"
	"github.com/multislice/multislice/internal/cli/nodepool"
	"github.com/multislice/multislice/internal/cli/program"
	"github.com/multislice/multislice/internal/cli/standin"
	"github.com/multislice/multislice/internal/cli/status"
	"github.com/multislice/multislice/internal/cli/up"
	"github.com/multislice/multislice/internal/cli/workload"
	"github.com/multislice/multislice/internal/versions"
)

// NewCmdRoot is `multislice`.
func NewCmdRoot(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "multislice",
		Version: versions.Multislice,
		Short:   "Multislice TPU training on Kubernetes: JobSet, TPU webhook, slice placement, auto-repair, local cluster",
		Long: `multislice runs multislice accelerator training on Kubernetes.

A local cluster with a simulated TPU fleet:
  multislice up                 start it (state in $MULTISLICE_HOME, default ~/.multislice)
  multislice status             components and fleet
  multislice nodepool list      node pools of the simulated cloud
  multislice down               stop it`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.SetOut(f.Out)
	cmd.SetErr(f.Err)
	f.BindClientFlags(cmd.PersistentFlags())
	cmd.AddCommand(up.NewCmdUp(f, nil), down.NewCmdDown(f, nil), status.NewCmdStatus(f, nil), nodepool.NewCmdNodepool(f),
		manager.NewCmdManager(f.Streams, nil), workload.NewCmdWorkload(f), chaos.NewCmdChaos(f), hidden.NewCmdCloudRepair(f, nil), hidden.NewCmdSimAgents(f, nil), hidden.NewCmdRegistry(f, nil), image.NewCmdImage(f), agent.NewCmdAgent(f.Streams, nil), logs.NewCmdLogs(f, nil), dashboard.NewCmdDashboard(f, nil), kueue.NewCmdKueue(f), standin.NewCmdPathwaysStandin(f.Streams))
	refuseUnknownSubcommands(cmd)
	return cmd
}

// Main runs the command line args and returns the process's exit code.
func Main(ctx context.Context, f *cli.Factory, args []string) int {
	cmd := NewCmdRoot(f)
	cmd.SetArgs(args)
	return program.Exit(f.Err, cmd.ExecuteContext(ctx))
}

// refuseUnknownSubcommands makes every command that only groups others
// (workload, nodepool, chaos) fail on an unknown subcommand, as kubectl
// does, instead of printing help and exiting 0; with no argument it still
// prints its help.
func refuseUnknownSubcommands(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		refuseUnknownSubcommands(c)
	}
	if !cmd.HasSubCommands() || cmd.Run != nil || cmd.RunE != nil {
		return
	}
	cmd.Args = func(c *cobra.Command, args []string) error {
		if len(args) > 0 {
			return fmt.Errorf("unknown command %q for %q; run '%s --help' for its commands", args[0], c.CommandPath(), c.CommandPath())
		}
		return nil
	}
	cmd.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
}
