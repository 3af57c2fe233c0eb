// Package down implements `multislice down`: stop every process `up` started.
package down

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/localcluster"
)

// Options is what `multislice down` was asked: nothing but where.
type Options struct{ F *cli.Factory }

// NewCmdDown is `multislice down`; runF (nil: downRun) gets the options.
func NewCmdDown(f *cli.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{F: f}
	if runF == nil {
		runF = downRun
	}
	return &cobra.Command{
		Use:   "down",
		Short: "Stop the local cluster: every process it started, leaving no port in use",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runF(cmd.Context(), o) },
	}
}

// downRun stops the cluster and reports each process.
func downRun(_ context.Context, o *Options) error {
	f := o.F
	home, err := localcluster.At(f.Home())
	if err != nil {
		return err
	}
	report, err := localcluster.Down(home)
	for _, r := range report {
		if r.WasRunning {
			fmt.Fprintf(f.Out, "stopped %s (pid %d)\n", r.Name, r.PID)
		} else {
			fmt.Fprintf(f.Out, "%s (pid %d) had already exited; see %s\n", r.Name, r.PID, home.Log(r.Name))
		}
	}
	if err != nil {
		return err
	}
	if report == nil {
		fmt.Fprintf(f.Out, "no cluster is running in %s\n", home)
		return nil
	}
	fmt.Fprintf(f.Out, "cluster in %s is down; logs are kept in %s\n", home, home.LogDir())
	return nil
}
