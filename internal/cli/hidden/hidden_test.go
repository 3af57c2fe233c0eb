package hidden

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/multislice/multislice/internal/cli"
)

func TestComponentOptions(t *testing.T) {
	var repair *CloudRepairOptions
	cmd := NewCmdCloudRepair(&cli.Factory{}, func(_ context.Context, o *CloudRepairOptions) error { repair = o; return nil })
	cmd.SetArgs([]string{"--delay=3s"})
	if err := cmd.Execute(); err != nil || repair.Flags.Delay != 3*time.Second {
		t.Errorf("cloud-repair: err %v, options %+v", err, repair)
	}
	var agents *SimAgentsOptions
	cmd = NewCmdSimAgents(&cli.Factory{}, func(_ context.Context, o *SimAgentsOptions) error { agents = o; return nil })
	cmd.SetArgs([]string{"--egress-port=7001", "--apiserver-relay=10.88.0.1:6443"})
	if err := cmd.Execute(); err != nil || agents.Flags.EgressPort != 7001 || agents.Flags.APIServerRelay != "10.88.0.1:6443" {
		t.Errorf("sim-agents: err %v, options %+v", err, agents)
	}
}

func TestRegistryOptions(t *testing.T) {
	var got *RegistryOptions
	cmd := NewCmdRegistry(nil, func(_ context.Context, o *RegistryOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--addr=127.0.0.1:5000", "--dir=/tmp/r"})
	if err := cmd.Execute(); err != nil || got.Addr != "127.0.0.1:5000" || got.Dir != "/tmp/r" {
		t.Fatalf("err %v, options %+v", err, got)
	}
	for _, tc := range []struct {
		o    RegistryOptions
		want string
	}{
		{RegistryOptions{Addr: "127.0.0.1:5000", Dir: "/r"}, ""},
		{RegistryOptions{Addr: "127.0.0.1:5000"}, "--dir is required"},
		{RegistryOptions{Addr: "0.0.0.0:5000", Dir: "/r"}, `--addr "0.0.0.0:5000": want 127.0.0.1:PORT`},
		{RegistryOptions{Addr: "localhost", Dir: "/r"}, `--addr "localhost"`},
	} {
		err := tc.o.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: err = %v, want %q", tc.o, err, tc.want)
		}
	}
}
