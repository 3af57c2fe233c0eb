package agent

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/multislice/multislice/internal/agent"
	"github.com/multislice/multislice/internal/cli/program"
)

func TestNewCmdAgentFillsOptions(t *testing.T) {
	var got *Options
	cmd := NewCmdAgent(program.Streams{}, func(_ context.Context, o *Options) error { got = o; return nil })
	cmd.SetArgs([]string{"--kubeconfig=/k"})
	if err := cmd.Execute(); err != nil || got.Kubeconfig != "/k" {
		t.Fatalf("err %v, options %+v", err, got)
	}
}

// The environment is checked before any cluster is reached, each refusal
// naming the variable.
func TestAgentEnvironment(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{agent.EnvNamespace: "ns", agent.EnvPodName: "p"}, agent.EnvJobSetName + " is empty"},
		{map[string]string{agent.EnvNamespace: "ns", agent.EnvJobSetName: "js"}, agent.EnvPodName + " is empty"},
		{map[string]string{agent.EnvNamespace: "ns", agent.EnvJobSetName: "js", agent.EnvPodName: "p", agent.EnvExitCode: "x"}, agent.EnvExitCode + `="x": want a number 1..255`},
		{map[string]string{agent.EnvNamespace: "ns", agent.EnvJobSetName: "js", agent.EnvPodName: "p", agent.EnvExitCode: "300"}, agent.EnvExitCode + "=300"},
	} {
		for _, k := range []string{agent.EnvNamespace, agent.EnvJobSetName, agent.EnvPodName, agent.EnvExitCode, agent.EnvWorkerCommand, agent.EnvProbePath, agent.EnvProbePort} {
			t.Setenv(k, tc.env[k])
		}
		var out bytes.Buffer
		cmd := NewCmdAgent(program.Streams{Out: &out, Err: &out}, nil)
		cmd.SetArgs(nil)
		cmd.SilenceUsage = true
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.env, err, tc.want)
		}
	}
}
