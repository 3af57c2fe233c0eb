package sim

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestInPlaceStatus(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	now := metav1.NewTime(t0.Add(time.Minute))
	simulated := corev1.PodCondition{Type: SimulatedCondition, Status: corev1.ConditionTrue, LastTransitionTime: t0}
	// A pod whose barrier is down: agent and worker running since t0.
	running := corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: t0},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: t0},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: t0},
			simulated,
		},
		InitContainerStatuses: []corev1.ContainerStatus{{Name: "in-place-restart-agent", Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t0}}}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "worker", Ready: true, Started: ptr.To(true), RestartCount: 2,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t0}}}},
	}
	// A pod at the barrier after its first start: kwok's Stage, no Ready yet.
	atBarrier := corev1.PodStatus{
		Phase:      corev1.PodRunning,
		Conditions: []corev1.PodCondition{simulated},
		InitContainerStatuses: []corev1.ContainerStatus{{Name: "in-place-restart-agent", Started: ptr.To(false),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t0}}}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "worker", Started: ptr.To(false),
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}},
	}

	last := func(steps []*corev1.PodStatus) *corev1.PodStatus { return steps[len(steps)-1] }
	restarted := last(AgentRestartSteps(&running, 1, t0))

	type want struct {
		ready      corev1.ConditionStatus
		readySince metav1.Time
		released   bool
		restarts   int32 // the worker's
		removed    bool  // last state: the kubelet's removal for RestartAllContainers
		conditions int
	}
	cases := []struct {
		name string
		got  *corev1.PodStatus
		want want
	}{
		{"released pod restarts all", last(AgentRestartSteps(&running, 1, now)),
			want{corev1.ConditionFalse, now, false, 3, true, 5}},
		{"pod at the barrier restarts all", last(AgentRestartSteps(&atBarrier, 7, now)),
			want{corev1.ConditionFalse, now, false, 1, true, 4}},
		{"barrier lifted after a restart", last(ReleaseSteps(restarted, now)),
			want{corev1.ConditionTrue, now, true, 3, true, 5}},
		{"barrier lifted at first start", last(ReleaseSteps(&atBarrier, now)),
			want{corev1.ConditionTrue, now, true, 0, false, 3}},
		{"barrier lifted twice keeps the transition", BarrierLifted(&running, now),
			want{corev1.ConditionTrue, t0, true, 2, false, 4}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, w := c.got, c.want
			if len(st.Conditions) != w.conditions {
				t.Errorf("%d conditions, want %d: %+v", len(st.Conditions), w.conditions, st.Conditions)
			}
			for _, cond := range st.Conditions {
				switch cond.Type {
				case corev1.PodReady, corev1.ContainersReady:
					if cond.Status != w.ready || !cond.LastTransitionTime.Equal(&w.readySince) {
						t.Errorf("%s = %s since %v, want %s since %v", cond.Type, cond.Status, cond.LastTransitionTime, w.ready, w.readySince)
					}
				case corev1.AllContainersRestarting:
					if cond.Status != corev1.ConditionFalse {
						t.Errorf("%s = %s once the containers restarted", cond.Type, cond.Status)
					}
				case SimulatedCondition:
					if cond != simulated {
						t.Errorf("simulated condition changed: %+v", cond)
					}
				}
			}
			if Released(st) != w.released {
				t.Errorf("Released = %v, want %v", Released(st), w.released)
			}
			worker, agent := st.ContainerStatuses[0], st.InitContainerStatuses[0]
			if worker.RestartCount != w.restarts {
				t.Errorf("worker restart count %d, want %d", worker.RestartCount, w.restarts)
			}
			if agent.State.Running == nil {
				t.Errorf("the agent does not run: %+v", agent.State)
			}
			if (worker.State.Running != nil) != w.released || worker.Ready != w.released || agent.Ready != w.released {
				t.Errorf("worker state %+v ready %v, agent ready %v; want running and ready = %v", worker.State, worker.Ready, agent.Ready, w.released)
			}
			if got := worker.LastTerminationState.Terminated; (got != nil) != w.removed || got != nil && *got != RestartingAllContainers {
				t.Errorf("last state %+v, want the kubelet's removal: %v", got, w.removed)
			}
		})
	}

	// The writes in between, in a real kubelet's order.
	exit := AgentRestartSteps(&running, 1, now)
	if len(exit) != 2 || exit[0].InitContainerStatuses[0].State.Terminated == nil || exit[0].InitContainerStatuses[0].State.Terminated.ExitCode != 1 ||
		exit[0].ContainerStatuses[0].RestartCount != 2 || exit[0].Conditions[len(exit[0].Conditions)-1].Type != corev1.AllContainersRestarting {
		t.Errorf("the agent's exit: %+v", exit[0])
	}
	release := ReleaseSteps(restarted, now)
	if a0, a1 := release[0].InitContainerStatuses[0], release[1].InitContainerStatuses[0]; len(release) != 3 ||
		!*a0.Started || a0.Ready || !a1.Ready || Released(release[0]) || Released(release[1]) {
		t.Errorf("the release: %+v", release)
	}
	if running.ContainerStatuses[0].RestartCount != 2 || running.Conditions[1].Status != corev1.ConditionTrue {
		t.Error("the input status was changed")
	}
	if Released(&corev1.PodStatus{}) {
		t.Error("a pod without container statuses is released")
	}
}
