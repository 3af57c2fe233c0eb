package up

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/cli/program"
	"github.com/multislice/multislice/internal/localcluster"
)

func TestNewCmdUpFillsOptions(t *testing.T) {
	var got *Options
	cmd := NewCmdUp(&cli.Factory{}, func(_ context.Context, o *Options) error { got = o; return nil })
	cmd.SetArgs([]string{"--fleet=f.yaml", "--apiserver-port=6443", "--timeout=5m", "--feature-gates=RestartJob=true",
		"--kueue", "--kueue-pods-ready-timeout=30s", "--repair-delay=2s", "--manager=in-cluster"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.FleetFile != "f.yaml" || got.APIServerPort != 6443 || got.Timeout != 5*time.Minute || got.FeatureGates != "RestartJob=true" ||
		!got.Kueue || got.KueuePodsReady != 30*time.Second || got.RepairDelay != 2*time.Second || got.Manager != localcluster.ManagerInCluster ||
		got.NoManager || got.PrintDefaultFleet {
		t.Errorf("options %+v", got)
	}
}

func TestUpValidate(t *testing.T) {
	ok := Options{Timeout: time.Minute, KueuePodsReady: time.Minute, RepairDelay: time.Second, Manager: localcluster.ManagerOnHost}
	for _, tc := range []struct {
		edit func(*Options)
		want string
	}{
		{func(*Options) {}, ""},
		{func(o *Options) { o.FeatureGates = "NoSuchGate=true" }, "NoSuchGate"},
		{func(o *Options) { o.APIServerPort = -1 }, "--apiserver-port -1"},
		{func(o *Options) { o.RepairDelay = 2 * time.Hour }, "--repair-delay"},
		{func(o *Options) { o.KueuePodsReady = time.Second }, "--kueue-pods-ready-timeout=1s: want 10s to 24h"},
		{func(o *Options) { o.Timeout = 2 * time.Hour }, "--timeout=2h0m0s: want 1s to 1h"},
		{func(o *Options) { o.NoManager, o.Manager = true, localcluster.ManagerInCluster }, "--no-manager and --manager=in-cluster: choose one"},
	} {
		o := ok
		tc.edit(&o)
		err := o.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: err = %v, want %q", o, err, tc.want)
		}
	}
}

// --print-default-fleet prints the fleet and starts nothing.
func TestUpPrintsDefaultFleet(t *testing.T) {
	var out bytes.Buffer
	cmd := NewCmdUp(&cli.Factory{Streams: program.Streams{Out: &out}, HomeDir: t.TempDir()}, nil)
	cmd.SetArgs([]string{"--print-default-fleet"})
	if err := cmd.Execute(); err != nil || !strings.Contains(out.String(), "kind: Fleet") {
		t.Errorf("err %v, printed %q", err, out.String())
	}
}
