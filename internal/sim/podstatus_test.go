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

	type want struct {
		ready        corev1.ConditionStatus
		readySince   metav1.Time
		released     bool
		restarts     int32 // the worker's
		lastStarted  *metav1.Time
		lastFinished *metav1.Time
		lastCode     int32
		conditions   int
	}
	cases := []struct {
		name string
		got  *corev1.PodStatus
		want want
	}{
		{"released pod restarts all", RestartedAll(&running, 1, now),
			want{corev1.ConditionFalse, now, false, 3, &t0, &now, 1, 4}},
		{"pod at the barrier restarts all", RestartedAll(&atBarrier, 7, now),
			want{corev1.ConditionFalse, now, false, 1, &now, &now, 7, 3}},
		{"barrier lifted after a restart", BarrierLifted(RestartedAll(&running, 1, t0), now),
			want{corev1.ConditionTrue, now, true, 3, &t0, &t0, 1, 4}},
		{"barrier lifted at first start", BarrierLifted(&atBarrier, now),
			want{corev1.ConditionTrue, now, true, 0, nil, nil, 0, 3}},
		{"barrier lifted twice keeps the transition", BarrierLifted(&running, now),
			want{corev1.ConditionTrue, t0, true, 2, nil, nil, 0, 4}},
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
			last := worker.LastTerminationState.Terminated
			switch {
			case w.lastStarted == nil && last != nil:
				t.Errorf("last state %+v, want none", last)
			case w.lastStarted != nil && last == nil:
				t.Errorf("no last state, want the exit")
			case last != nil && (!last.StartedAt.Equal(w.lastStarted) || !last.FinishedAt.Equal(w.lastFinished) || last.ExitCode != w.lastCode):
				t.Errorf("last state %+v, want exit %d, %v to %v", last, w.lastCode, w.lastStarted, w.lastFinished)
			}
		})
	}
	if running.ContainerStatuses[0].RestartCount != 2 || running.Conditions[1].Status != corev1.ConditionTrue {
		t.Error("the input status was changed")
	}
	if Released(&corev1.PodStatus{}) {
		t.Error("a pod without container statuses is released")
	}
}
