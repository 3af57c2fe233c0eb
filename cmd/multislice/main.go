// Command multislice is the Multislice CLI and manager.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/cli/root"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	f := cli.NewFactory()
	if err := root.NewCmdRoot(f).ExecuteContext(ctx); err != nil {
		fmt.Fprintln(f.Err, "error:", err)
		os.Exit(1)
	}
}
