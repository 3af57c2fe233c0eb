package hidden

import (
	"context"
	"fmt"
	"net"

	"github.com/spf13/cobra"

	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/localcluster/realhost"
)

// RegistryOptions are the flags of `multislice registry`.
type RegistryOptions struct {
	// Addr is 127.0.0.1:PORT; Dir holds the blobs and manifests.
	Addr, Dir string
}

// Validate refuses a missing directory and an address off the loopback.
func (o *RegistryOptions) Validate() error {
	if o.Dir == "" {
		return fmt.Errorf("--dir is required: where blobs and manifests are kept")
	}
	host, _, err := net.SplitHostPort(o.Addr)
	if err != nil || net.ParseIP(host) == nil || !net.ParseIP(host).IsLoopback() {
		return fmt.Errorf("--addr %q: want 127.0.0.1:PORT (the registry serves this machine only)", o.Addr)
	}
	return nil
}

// NewCmdRegistry is the hidden `multislice registry`, one component of a
// local cluster with real hosts: the OCI registry they pull images from;
// runF (nil: registryRun) gets the options.
func NewCmdRegistry(_ *cli.Factory, runF func(context.Context, *RegistryOptions) error) *cobra.Command {
	o := &RegistryOptions{}
	if runF == nil {
		runF = registryRun
	}
	cmd := &cobra.Command{
		Use:    "registry",
		Short:  "Serve the local cluster's OCI registry on 127.0.0.1 (run by multislice up)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE:   func(cmd *cobra.Command, _ []string) error { return runF(cmd.Context(), o) },
	}
	cmd.Flags().StringVar(&o.Addr, "addr", "", "address to serve on, 127.0.0.1:PORT")
	cmd.Flags().StringVar(&o.Dir, "dir", "", "directory for blobs and manifests")
	return cmd
}

// registryRun serves the registry until ctx ends.
func registryRun(ctx context.Context, o *RegistryOptions) error {
	if err := o.Validate(); err != nil {
		return err
	}
	l, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return err
	}
	return (&realhost.Registry{Dir: o.Dir}).Serve(ctx, l)
}
