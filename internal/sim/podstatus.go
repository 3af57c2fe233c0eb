package sim

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// What the kubelet of a simulated node writes for a pod with the in-place
// restart agent, when the agent acts: the simulated agents write it
// themselves, one status write per step as a real kubelet, instead of
// signalling a kwok Stage (which costs a pod write more per step and pod).
// The shapes match the Stages in stages.yaml.

// RestartedAll is the status after every container of the pod restarted
// in place (RestartAllContainers) because one exited with code: each
// container's restart count is one more, its last state that exit, and
// the workers wait at the barrier again.
func RestartedAll(st *corev1.PodStatus, code int32, now metav1.Time) *corev1.PodStatus {
	out := st.DeepCopy()
	out.Conditions = podConditions(st, now, corev1.ConditionFalse)
	restart := func(list []corev1.ContainerStatus, state corev1.ContainerState) {
		for i := range list {
			c := &list[i]
			started := now
			if c.State.Running != nil {
				started = c.State.Running.StartedAt
			}
			c.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: code, Reason: "Error", StartedAt: started, FinishedAt: now,
			}}
			c.RestartCount++
			c.Ready, c.Started = false, ptr.To(false)
			c.State = state
		}
	}
	restart(out.InitContainerStatuses, corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}})
	restart(out.ContainerStatuses, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
		Reason: "PodInitializing", Message: "restarted in place (RestartAllContainers); held at the barrier",
	}})
	return out
}

// BarrierLifted is the status once the agent's startup probe passed: every
// container runs and is ready.
func BarrierLifted(st *corev1.PodStatus, now metav1.Time) *corev1.PodStatus {
	out := st.DeepCopy()
	out.Conditions = podConditions(st, now, corev1.ConditionTrue)
	for _, list := range [][]corev1.ContainerStatus{out.InitContainerStatuses, out.ContainerStatuses} {
		for i := range list {
			c := &list[i]
			c.Ready, c.Started = true, ptr.To(true)
			c.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
		}
	}
	return out
}

// Released: the barrier of the pod's current incarnation is down.
func Released(st *corev1.PodStatus) bool {
	for _, c := range st.ContainerStatuses {
		if c.Started == nil || !*c.Started {
			return false
		}
	}
	return len(st.ContainerStatuses) > 0
}

// podConditions sets Ready and ContainersReady to ready (moving their
// transition time only when they change) and keeps every other condition.
func podConditions(st *corev1.PodStatus, now metav1.Time, ready corev1.ConditionStatus) []corev1.PodCondition {
	reason := ""
	if ready != corev1.ConditionTrue {
		reason = "ContainersNotReady"
	}
	out := make([]corev1.PodCondition, 0, len(st.Conditions)+2)
	set := map[corev1.PodConditionType]bool{}
	for _, c := range st.Conditions {
		if c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
			if c.Status != ready {
				c.LastTransitionTime = now
			}
			c.Status, c.Reason, c.Message = ready, reason, ""
			set[c.Type] = true
		}
		out = append(out, c)
	}
	for _, t := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
		if !set[t] {
			out = append(out, corev1.PodCondition{Type: t, Status: ready, Reason: reason, LastTransitionTime: now})
		}
	}
	return out
}
