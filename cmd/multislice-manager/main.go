// Command multislice-manager is what the image runs, and nothing else:
// `manager` (every controller and webhook), `agent` (the in-place restart
// sidecar) and `pathways-standin` (the Pathways parts' stand-in), with the
// arguments of the same `multislice` commands, and without the CLI, the
// local cluster, its simulator or its real hosts.
package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/multislice/multislice/internal/cli/agent"
	"github.com/multislice/multislice/internal/cli/manager"
	"github.com/multislice/multislice/internal/cli/program"
	"github.com/multislice/multislice/internal/cli/standin"
)

func main() { program.Main(run) }

func run(ctx context.Context, s program.Streams, args []string) int {
	root := &cobra.Command{
		Use:           "multislice-manager",
		Short:         "The Multislice image's commands: the manager, the in-place restart agent and the Pathways stand-in",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.AddCommand(manager.NewCmdManager(s, nil), agent.NewCmdAgent(s, nil), standin.NewCmdPathwaysStandin(s))
	root.SetArgs(args)
	return program.Exit(s.Err, root.ExecuteContext(ctx))
}
