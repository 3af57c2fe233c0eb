// Package manager implements `multislice manager`: every controller and
// webhook of Multislice in one process (in a Deployment, or started by
// `multislice up` on the local cluster).
package manager

import (
	"context"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/multislice/multislice/internal/cli/program"
	"github.com/multislice/multislice/internal/manager"
)

// Options is `multislice manager`'s command line: manager.Flags, with a
// --config file's values under the flags given.
type Options struct {
	program.Streams
	Flags manager.Flags
}

// NewCmdManager is `multislice manager`; runF (nil: managerRun) gets the
// options once the --config file is applied.
func NewCmdManager(s program.Streams, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{Streams: s}
	if runF == nil {
		runF = managerRun
	}
	cmd := &cobra.Command{
		Use:   "manager",
		Short: "Run the JobSet controller and the admission webhooks",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Flags.ApplyConfigFile(cmd.Flags()); err != nil {
				return err
			}
			return runF(cmd.Context(), o)
		},
	}
	o.Flags.Bind(cmd.Flags())
	return cmd
}

// managerRun runs the manager until ctx ends.
func managerRun(ctx context.Context, o *Options) error {
	ctrl.SetLogger(zap.New(zap.WriteTo(o.Err)))
	manager.SetMemoryLimit(ctrl.Log)
	manager.SetGCPercent()
	mo, cfg, err := o.Flags.Complete()
	if err != nil {
		return err
	}
	return manager.Run(ctx, cfg, mo)
}
