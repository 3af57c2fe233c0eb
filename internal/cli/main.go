package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Main runs a program's command line (os.Args[1:]) with a Factory and a
// context that ends on SIGINT or SIGTERM, and exits with run's code.
func Main(run func(ctx context.Context, f *Factory, args []string) int) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, NewFactory(), os.Args[1:])
	stop() // os.Exit runs no deferred calls
	os.Exit(code)
}
