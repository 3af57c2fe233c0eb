// Package sim defines how the simulated fleet behaves: the kwok Stages that
// play kubelet for simulated nodes and their pods, and the pod annotations
// that tell a simulated pod when to exit and with which code.
package sim

import _ "embed"

const (
	// RunAnnotation makes a Running pod on a simulated node exit after the
	// given Go duration ("30s", "2m"). Without it the pod runs until deleted.
	RunAnnotation = "multislice.dev/simulate-run"
	// ExitCodeAnnotation is the exit code of that exit (default "0"): 0
	// makes the pod Succeeded, anything else Failed.
	ExitCodeAnnotation = "multislice.dev/simulate-exit-code"
	// GracefulStopAnnotation makes a deleted pod take its whole termination
	// grace period to go, like a process that ignores SIGTERM.
	GracefulStopAnnotation = "multislice.dev/simulate-graceful-stop"
	// SimulatedCondition is a pod condition that says, on every pod a
	// simulated node runs, that no container process actually ran.
	SimulatedCondition = "multislice.dev/Simulated"
	// RestartAllAnnotation ("<restart count>/<exit code>") asks the
	// simulated kubelet to restart every container of the pod in place, as
	// the agent's exit with its restart code does; it acts only while the
	// restart count is still the one named.
	RestartAllAnnotation = "multislice.dev/simulate-restart-all"
	// BarrierLiftedAnnotation ("<restart count>") stands for the agent's
	// startup probe passing in that incarnation: the workers start.
	BarrierLiftedAnnotation = "multislice.dev/simulate-barrier-lifted"
)

// Stages is the kwok configuration: KwokConfiguration options plus the
// node and pod Stages, as one multi-document YAML file for kwok --config.
//
//go:embed stages.yaml
var Stages []byte

// KwokRBAC is what kwok may do: a ClusterRole and its binding, to which
// the local cluster adds kwok's user.
//
//go:embed kwok-rbac.yaml
var KwokRBAC []byte
