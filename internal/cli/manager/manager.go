// Package manager implements `multislice manager`: every controller and
// webhook of Multislice in one process (in a Deployment, or started by
// `multislice up` on the local cluster).
package manager

import (
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/manager"
)

// NewCmdManager is `multislice manager`; its flags are manager.Flags.
func NewCmdManager(f *cli.Factory) *cobra.Command {
	var fl manager.Flags
	cmd := &cobra.Command{
		Use:   "manager",
		Short: "Run the JobSet controller and the admission webhooks",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctrl.SetLogger(zap.New(zap.WriteTo(f.Err)))
			if err := fl.ApplyConfigFile(cmd.Flags()); err != nil {
				return err
			}
			o, cfg, err := fl.Complete()
			if err != nil {
				return err
			}
			return manager.Run(cmd.Context(), cfg, o)
		},
	}
	fl.Bind(cmd.Flags())
	return cmd
}
