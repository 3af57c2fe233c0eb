package image

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/cli/program"
)

func TestNewCmdLoadFillsOptions(t *testing.T) {
	var got *LoadOptions
	cmd := NewCmdLoad(&cli.Factory{}, func(_ context.Context, o *LoadOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"/tmp/trainer", "ghcr.io/me/trainer:v1", "--arg=--steps", "--arg=10"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Path != "/tmp/trainer" || got.Ref != "ghcr.io/me/trainer:v1" || strings.Join(got.Args, " ") != "--steps 10" {
		t.Errorf("options %+v", got)
	}
}

// A cluster without real hosts has no registry: said before reading the image.
func TestLoadWithoutRealHosts(t *testing.T) {
	var out bytes.Buffer
	cmd := NewCmdLoad(&cli.Factory{Streams: program.Streams{Out: &out}, HomeDir: t.TempDir()}, nil)
	cmd.SetArgs([]string{"/nonexistent", "ghcr.io/me/trainer:v1"})
	cmd.SilenceUsage = true
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "has no real hosts, so no registry") {
		t.Errorf("err = %v", err)
	}
}
