// Package agent is `multislice agent`, the in-place restart agent run as a
// sidecar (or as the main container) of every pod of an InPlaceRestart
// JobSet. It reads upstream's environment variables, so upstream's pod
// templates run it unchanged.
package agent

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/multislice/multislice/internal/agent"
	"github.com/multislice/multislice/internal/cli/program"
)

// namespaceFile is where a pod's service account says its namespace.
const namespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// Options is `multislice agent`'s command line; the rest of its input is
// its environment (agent.Options).
type Options struct {
	program.Streams
	// Kubeconfig is a kubeconfig file ("": the in-cluster configuration).
	Kubeconfig string
}

// NewCmdAgent is `multislice agent`; runF (nil: agentRun) gets the options.
func NewCmdAgent(s program.Streams, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{Streams: s}
	if runF == nil {
		runF = agentRun
	}
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "In-place restart agent (KEP-467): run in every pod of a JobSet with restartStrategy InPlaceRestart",
		Long: `agent joins its pod to the JobSet's in-place restart protocol: it writes the
pod's attempt to the annotation jobset.sigs.k8s.io/in-place-restart-attempt,
exits with $IN_PLACE_RESTART_EXIT_CODE (default 1) when the controller makes
that attempt previous (the pod's RestartAllContainers rule then restarts
every container in place), and lifts its barrier once every pod is in the
current attempt: as a sidecar its startup probe ($STARTUP_PROBE_PATH on
$STARTUP_PROBE_PORT, default /barrier-is-down on 8081) passes; with
$WORKER_COMMAND it runs that command and exits with its code.

Environment: JOBSET_NAME and POD_NAME (downward API); the namespace comes
from the service account (or POD_NAMESPACE). It needs get/list/watch on its
JobSet and patch on pods (config/agent/rbac.yaml). See docs/auto-repair.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runF(cmd.Context(), o) },
	}
	cmd.Flags().StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster configuration)")
	return cmd
}

// agentRun runs the agent until its protocol says to exit; its exit code
// is the answer (program.ExitCode).
func agentRun(ctx context.Context, o *Options) error {
	ao, err := optionsFromEnv()
	if err != nil {
		return err
	}
	ao.Log = o.Err
	cfg, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	if err != nil {
		return fmt.Errorf("--kubeconfig: %w", err)
	}
	// ctx ends on SIGINT or SIGTERM (program.Main's handler).
	code, err := agent.Run(ctx, cfg, ao)
	if err != nil && ctx.Err() == nil {
		return err
	}
	if ctx.Err() != nil {
		code = 128 + int(syscall.SIGTERM) // a stopped agent: never 0, which would mean "done"
	}
	if code == 0 {
		return nil
	}
	return program.ExitCode(code)
}

func optionsFromEnv() (agent.Options, error) {
	o := agent.Options{
		Namespace:     os.Getenv(agent.EnvNamespace),
		JobSetName:    os.Getenv(agent.EnvJobSetName),
		PodName:       os.Getenv(agent.EnvPodName),
		WorkerCommand: os.Getenv(agent.EnvWorkerCommand),
		ProbePath:     os.Getenv(agent.EnvProbePath),
		ProbePort:     os.Getenv(agent.EnvProbePort),
		ProbeHost:     os.Getenv(agent.EnvProbeHost),
		ExitCode:      agent.DefaultExitCode,
	}
	if o.Namespace == "" {
		if b, err := os.ReadFile(namespaceFile); err == nil {
			o.Namespace = strings.TrimSpace(string(b))
		}
	}
	if v := os.Getenv(agent.EnvExitCode); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return o, fmt.Errorf("%s=%q: want a number 1..255", agent.EnvExitCode, v)
		}
		o.ExitCode = n
	}
	return o, o.Check()
}
