// Command multislice is the Multislice CLI and manager.
package main

import (
	"context"

	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/cli/program"
	"github.com/multislice/multislice/internal/cli/root"
)

func main() {
	program.Main(func(ctx context.Context, s program.Streams, args []string) int {
		return root.Main(ctx, cli.NewFactory(s), args)
	})
}
