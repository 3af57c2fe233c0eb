// Package standin is `multislice pathways-standin` (hidden): the project's
// image playing Pathways' proxy, resource manager or worker with xpk's
// arguments, where Pathways' own images are not given (internal/standin).
package standin

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/multislice/multislice/internal/cli/program"
	"github.com/multislice/multislice/internal/standin"
)

// NewCmdPathwaysStandin is `multislice pathways-standin --role=R` followed
// by xpk's arguments for that part (--server_port=..., ...).
func NewCmdPathwaysStandin(s program.Streams) *cobra.Command {
	o := standin.Options{Getenv: standin.Getenv, Out: s.Out}
	cmd := &cobra.Command{
		Use:    "pathways-standin --role=proxy|resource-manager|worker [xpk's arguments]",
		Short:  "Play a Pathways part for `workload create-pathways` where Pathways' images are not given",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			err := standin.Run(ctx, o)
			var code standin.ExitError
			if errors.As(err, &code) {
				return program.ExitCode(int(code))
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Role, "role", "", "proxy, resource-manager or worker (required)")
	fl.IntVar(&o.ServerPort, "server_port", 0, "the port it serves (xpk's argument)")
	fl.StringVar(&o.ResourceManager, "resource_manager_address", "", "host:port of the resource manager (xpk's argument)")
	// xpk's other arguments, accepted and shown, not used.
	for _, name := range []string{"gcs_scratch_location", "node_type", "instance_type"} {
		fl.String(name, "", "xpk's argument (accepted, not used)")
	}
	fl.Int("instance_count", 0, "xpk's argument (accepted, not used)")
	fl.Int("num_elastic_slices", 0, "xpk's argument (accepted, not used)")
	_ = cmd.MarkFlagRequired("role")
	cmd.PreRun = func(*cobra.Command, []string) {
		fmt.Fprintf(s.Out, "pathways-standin %s: not Pathways, a stand-in\n", o.Role)
	}
	return cmd
}
