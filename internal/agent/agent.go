// Package agent is the in-place restart agent of KEP-467: a sidecar in
// every pod of an InPlaceRestart JobSet. It tells the controller which
// attempt its pod is in (a pod annotation), restarts its pod in place when
// the controller declares that attempt previous, and holds the workers at a
// barrier until every pod of the JobSet is in the current attempt.
//
// State.Next is the whole protocol as a pure step; Run drives it for one
// real pod, and the simulated fleet drives it for many.
package agent

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

// Environment of the agent container, as upstream's agent reads it.
const (
	EnvJobSetName    = "JOBSET_NAME"
	EnvPodName       = "POD_NAME"
	EnvWorkerCommand = "WORKER_COMMAND"
	EnvProbePath     = "STARTUP_PROBE_PATH"
	EnvProbePort     = "STARTUP_PROBE_PORT"
	EnvExitCode      = "IN_PLACE_RESTART_EXIT_CODE"
	// EnvNamespace overrides the service-account namespace file, and
	// EnvProbeHost the probe's listen address (default all), both
	// Multislice's own.
	EnvNamespace = "POD_NAMESPACE"
	EnvProbeHost = "STARTUP_PROBE_HOST"

	DefaultProbePath = "/barrier-is-down"
	DefaultProbePort = "8081"
	DefaultExitCode  = 1
	// ContainerName is the agent container's name in upstream's examples;
	// the simulated fleet runs the agent for pods that have one.
	ContainerName = "in-place-restart-agent"
)

// Action is what the agent does next.
type Action int

const (
	// Wait: nothing to do until the JobSet changes.
	Wait Action = iota
	// Annotate: write the pod's attempt (Next's second result).
	Annotate
	// Restart: exit with the in-place restart code, so the kubelet's
	// RestartAllContainers rule restarts every container of the pod.
	Restart
	// Release: lift the barrier (start the worker, or pass the probe).
	Release
)

func (a Action) String() string {
	return [...]string{"wait", "annotate", "restart", "release"}[a]
}

// State is one agent process's memory: it starts empty with every
// (re)start of the pod's containers.
type State struct {
	// Attempt is the attempt this process has written to its pod.
	Attempt *int32
	// Released: the barrier is down.
	Released bool
}

// Next decides the next action from the JobSet as it is now. After
// Annotate the caller sets Attempt once the write succeeded; after Release,
// Released.
func (s *State) Next(js *api.JobSet) (Action, int32) {
	if Bypass(js) {
		if s.Released {
			return Wait, 0
		}
		return Release, 0 // no in-place restart: the agent stands aside
	}
	current, previous := js.Status.CurrentInPlaceRestartAttempt, js.Status.PreviousInPlaceRestartAttempt
	if s.Attempt == nil {
		// First start: attempt 0. Any later start (this pod restarted in
		// place, or a new pod) joins the attempt after the current one.
		if current == nil {
			return Annotate, 0
		}
		return Annotate, *current + 1
	}
	if previous != nil && *s.Attempt <= *previous {
		return Restart, 0
	}
	if !s.Released && current != nil && *s.Attempt == *current {
		return Release, 0
	}
	return Wait, 0
}

// Moved: what Next reads of a JobSet differs between a and b; a JobSet
// update that moves nothing (its counts, its conditions) leaves every agent
// where it is.
func Moved(a, b *api.JobSet) bool {
	return Bypass(a) != Bypass(b) ||
		!ptr.Equal(a.Status.CurrentInPlaceRestartAttempt, b.Status.CurrentInPlaceRestartAttempt) ||
		!ptr.Equal(a.Status.PreviousInPlaceRestartAttempt, b.Status.PreviousInPlaceRestartAttempt)
}

// Bypass: the JobSet does not restart in place (another strategy, or the
// disable annotation, e.g. after a downgrade): the agent lets the worker run.
func Bypass(js *api.JobSet) bool {
	if _, off := js.Annotations[api.DisableInPlaceRestartKey]; off {
		return true
	}
	fp := js.Spec.FailurePolicy
	return fp == nil || fp.RestartStrategy != api.InPlaceRestart
}

// AttemptPatch is the merge patch that writes a pod's attempt.
func AttemptPatch(n int32) []byte {
	return []byte(`{"metadata":{"annotations":{"` + api.InPlaceRestartAttemptKey + `":"` + strconv.Itoa(int(n)) + `"}}}`)
}

// PodAttempt reads the annotation the agent writes: nil when absent or
// not a whole number 0 or more.
func PodAttempt(annotations map[string]string) *int32 {
	v, ok := annotations[api.InPlaceRestartAttemptKey]
	if !ok {
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 0 {
		return nil
	}
	return ptr.To(int32(n))
}

// MaxRestartCount is the highest restartCount of a pod's containers.
func MaxRestartCount(st *corev1.PodStatus) int32 {
	var n int32
	for _, list := range [][]corev1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
		for _, c := range list {
			n = max(n, c.RestartCount)
		}
	}
	return n
}
