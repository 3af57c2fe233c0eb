package policy

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

// startable says which replicated jobs may have their Jobs created or
// resumed now, honouring dependsOn and startupPolicy InOrder; it keeps the
// StartupPolicy conditions up to date. InOrder lets a replicated job start
// once every earlier one has all its Jobs started (ready, succeeded or
// failed) in the current attempt, so each restart and each resume starts in
// order again. While the JobSet is suspended InOrder holds nothing back:
// every Job is created, suspended, and no startup condition changes.
func startable(js *api.JobSet, st []api.ReplicatedJobStatus, e *statusEditor, suspended bool) map[string]bool {
	out := make(map[string]bool, len(js.Spec.ReplicatedJobs))
	byName := map[string]api.ReplicatedJobStatus{}
	replicas := map[string]int32{}
	for i, rj := range js.Spec.ReplicatedJobs {
		byName[rj.Name], replicas[rj.Name] = st[i], rj.Replicas
	}
	reached := func(name string, want api.DependsOnStatus) bool {
		s := byName[name]
		if want == api.DependencyComplete {
			return s.Succeeded == replicas[name]
		}
		return s.Failed+s.Ready+s.Succeeded == replicas[name]
	}
	inOrder := isInOrder(js) && !suspended
	previousReady := true
	for _, rj := range js.Spec.ReplicatedJobs {
		ok := true
		for _, d := range rj.DependsOn {
			ok = ok && reached(d.Name, d.Status)
		}
		if inOrder {
			ok = ok && previousReady
			previousReady = previousReady && reached(rj.Name, api.DependencyReady)
		}
		out[rj.Name] = ok
	}
	if inOrder {
		if previousReady {
			e.set(api.JobSetStartupPolicyCompleted, metav1.ConditionTrue, api.InOrderStartupPolicyCompletedReason, api.InOrderStartupPolicyCompletedMessage, "Normal")
			e.set(api.JobSetStartupPolicyInProgress, metav1.ConditionFalse, api.InOrderStartupPolicyInProgressReason, api.InOrderStartupPolicyInProgressMessage, "")
		} else {
			startInOrderAgain(e)
		}
	}
	return out
}

func isInOrder(js *api.JobSet) bool {
	return js.Spec.StartupPolicy != nil && js.Spec.StartupPolicy.StartupPolicyOrder == api.InOrder
}

func startInOrderAgain(e *statusEditor) {
	e.set(api.JobSetStartupPolicyCompleted, metav1.ConditionFalse, api.InOrderStartupPolicyInProgressReason, api.InOrderStartupPolicyInProgressMessage, "")
	e.set(api.JobSetStartupPolicyInProgress, metav1.ConditionTrue, api.InOrderStartupPolicyInProgressReason, api.InOrderStartupPolicyInProgressMessage, "Normal")
}

func conditionTrue(st *api.JobSetStatus, t api.JobSetConditionType) bool {
	for _, c := range st.Conditions {
		if c.Type == string(t) {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}
