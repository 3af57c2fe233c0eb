package manager

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/multislice/multislice/internal/cli/program"
)

// Flags given on the command line win over the --config file's values.
func TestNewCmdManagerFillsOptions(t *testing.T) {
	config := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(config, []byte(`apiVersion: config.jobset.x-k8s.io/v1alpha1
kind: Configuration
leaderElection: {leaderElect: true}
clientConnection: {qps: 77, burst: 99}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var got *Options
	cmd := NewCmdManager(program.Streams{}, func(_ context.Context, o *Options) error { got = o; return nil })
	cmd.SetArgs([]string{"--config=" + config, "--leader-elect=false", "--no-slice-health", "--in-place-restart-timeout=30s"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Flags.LeaderElect || !got.Flags.NoSliceHealth || got.Flags.AgentTimeout != 30*time.Second || got.Flags.QPS != 77 || got.Flags.Burst != 99 {
		t.Errorf("flags %+v", got.Flags)
	}
}
