// Package program owns what every command-line program of this project
// shares, whatever commands it carries: its output streams, the context
// its signals end, and its exit code. It imports no client library, so the
// manager-only binary (cmd/multislice-manager) links none of the CLI's own
// (kubectl's client flags and printers, kustomize).
package program

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Streams are where a command writes.
type Streams struct {
	Out, Err io.Writer
}

// Main runs a program's command line (os.Args[1:]) with the process's
// stdout and stderr and a context that ends on SIGINT or SIGTERM, and exits
// with run's code.
func Main(run func(ctx context.Context, s Streams, args []string) int) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, Streams{Out: os.Stdout, Err: os.Stderr}, os.Args[1:])
	stop() // os.Exit runs no deferred calls
	os.Exit(code)
}

// ExitCode is an error that ends the process with that code and prints
// nothing: the answer of a command whose exit status is its result (the
// in-place restart agent's).
type ExitCode int

func (c ExitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }

// Exit is err's exit code: 0 for none, an ExitCode's own (printing
// nothing), else 1 after printing the error to stderr.
func Exit(stderr io.Writer, err error) int {
	var code ExitCode
	switch {
	case err == nil:
		return 0
	case errors.As(err, &code):
		return int(code)
	}
	fmt.Fprintln(stderr, "error:", err)
	return 1
}
