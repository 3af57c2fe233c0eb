// Command multislice is the Multislice CLI and manager.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/cli/root"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code := root.Main(ctx, cli.NewFactory(), os.Args[1:])
	stop()
	os.Exit(code)
}
