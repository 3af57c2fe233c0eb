package sim

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// What the kubelet of a simulated node writes for a pod with the in-place
// restart agent, when the agent acts: the simulated agents write it
// themselves, one status write per kubelet write, in the order a real
// 1.37 kubelet writes them (recorded on the real hosts of `multislice up`;
// docs/auto-repair.md), instead of signalling a kwok Stage. Two
// differences stay: a real kubelet reports a pod at the barrier as Pending
// (not initialized), the simulation as Running, since kwok's Stages start
// every Pending pod; and kwok's Stage for a worker's own failure keeps its
// exit code as the last state, where a real kubelet writes 137.

// RestartingAllContainers is the last state a real kubelet gives every
// container it removes for a RestartAllContainers rule, whichever exited.
var RestartingAllContainers = corev1.ContainerStateTerminated{
	ExitCode: 137, Reason: "RestartingAllContainers",
	Message: "The container is removed because RestartAllContainers in place",
}

// AgentRestartSteps are the kubelet's two writes when the agent exits with
// code under its RestartAllContainers rule: the agent terminated (the
// condition AllContainersRestarting set), then every container restarted in
// place: each one's restart count one more, the agent running again, the
// workers waiting at the barrier.
func AgentRestartSteps(st *corev1.PodStatus, code int32, now metav1.Time) []*corev1.PodStatus {
	exited := st.DeepCopy()
	exited.Conditions = setCondition(podConditions(st, now, corev1.ConditionFalse), corev1.AllContainersRestarting,
		corev1.ConditionTrue, "RestartAllContainersStarted", "container exited with restart policy rule", now)
	for i := range exited.InitContainerStatuses {
		c := &exited.InitContainerStatuses[i]
		started := now
		if c.State.Running != nil {
			started = c.State.Running.StartedAt
		}
		c.Ready, c.Started = false, ptr.To(false)
		c.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Error", StartedAt: started, FinishedAt: now}}
	}
	return []*corev1.PodStatus{exited, RestartedAll(exited, now)}
}

// RestartedAll is the status after every container of the pod restarted
// in place (RestartAllContainers): each container's restart count is one
// more, its last state the kubelet's removal, and the workers wait at the
// barrier again.
func RestartedAll(st *corev1.PodStatus, now metav1.Time) *corev1.PodStatus {
	out := st.DeepCopy()
	out.Conditions = setCondition(podConditions(st, now, corev1.ConditionFalse), corev1.AllContainersRestarting,
		corev1.ConditionFalse, "", "", now)
	restart := func(list []corev1.ContainerStatus, state corev1.ContainerState) {
		for i := range list {
			c := &list[i]
			c.LastTerminationState = corev1.ContainerState{Terminated: RestartingAllContainers.DeepCopy()}
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

// ReleaseSteps are the kubelet's three writes once the agent's startup
// probe passes: the agent started, the agent ready (the pod initialized),
// then the workers running and the pod ready.
func ReleaseSteps(st *corev1.PodStatus, now metav1.Time) []*corev1.PodStatus {
	started := st.DeepCopy()
	for i := range started.InitContainerStatuses {
		started.InitContainerStatuses[i].Started = ptr.To(true)
	}
	ready := started.DeepCopy()
	for i := range ready.InitContainerStatuses {
		ready.InitContainerStatuses[i].Ready = true
	}
	return []*corev1.PodStatus{started, ready, BarrierLifted(ready, now)}
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
			if c.State.Running == nil {
				c.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
			}
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

// setCondition sets a condition of type t, moving its transition time only
// when its status changes; a False condition that was never set stays unset.
func setCondition(conds []corev1.PodCondition, t corev1.PodConditionType, status corev1.ConditionStatus, reason, msg string, now metav1.Time) []corev1.PodCondition {
	for i := range conds {
		if conds[i].Type == t {
			if conds[i].Status != status {
				conds[i].LastTransitionTime = now
			}
			conds[i].Status, conds[i].Reason, conds[i].Message = status, reason, msg
			return conds
		}
	}
	if status == corev1.ConditionFalse {
		return conds
	}
	return append(conds, corev1.PodCondition{Type: t, Status: status, Reason: reason, Message: msg, LastTransitionTime: now})
}
