package dashboard

import (
	"context"
	"strings"
	"testing"

	"github.com/multislice/multislice/internal/cli"
)

func TestNewCmdDashboardFillsOptions(t *testing.T) {
	var got *Options
	cmd := NewCmdDashboard(&cli.Factory{}, func(_ context.Context, o *Options) error { got = o; return nil })
	cmd.SetArgs([]string{"--port=8080", "--group-label=pool-group"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Address != "127.0.0.1" || got.Port != 8080 || got.GroupLabel != "pool-group" {
		t.Errorf("options %+v", got)
	}
	for port, want := range map[int]string{0: "", 65535: "", -1: "--port -1", 70000: "--port 70000: use 1-65535, or 0 for a free port"} {
		err := (&Options{Port: port}).Validate()
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("port %d: err = %v, want %q", port, err, want)
		}
	}
}
