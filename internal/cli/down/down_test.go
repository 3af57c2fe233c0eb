package down

import (
	"bytes"
	"strings"
	"testing"

	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/cli/program"
)

// With nothing running, down says so and succeeds.
func TestDownWithNoCluster(t *testing.T) {
	var out bytes.Buffer
	home := t.TempDir()
	cmd := NewCmdDown(&cli.Factory{Streams: program.Streams{Out: &out}, HomeDir: home}, nil)
	cmd.SetArgs(nil)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.Contains(got, "no cluster is running in "+home) {
		t.Errorf("printed %q", got)
	}
}
