package up

import (
	"fmt"
	"net"

	"github.com/spf13/cobra"

	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/sim/realhost"
)

// NewCmdRegistry is the hidden `multislice registry`, one component of a
// local cluster with real hosts: the OCI registry they pull images from.
func NewCmdRegistry(_ *cli.Factory) *cobra.Command {
	var addr, dir string
	cmd := &cobra.Command{
		Use:    "registry",
		Short:  "Serve the local cluster's OCI registry on 127.0.0.1 (run by multislice up)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return fmt.Errorf("--dir is required: where blobs and manifests are kept")
			}
			host, _, err := net.SplitHostPort(addr)
			if err != nil || net.ParseIP(host) == nil || !net.ParseIP(host).IsLoopback() {
				return fmt.Errorf("--addr %q: want 127.0.0.1:PORT (the registry serves this machine only)", addr)
			}
			l, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			return (&realhost.Registry{Dir: dir}).Serve(cmd.Context(), l)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "", "address to serve on, 127.0.0.1:PORT")
	cmd.Flags().StringVar(&dir, "dir", "", "directory for blobs and manifests")
	return cmd
}
