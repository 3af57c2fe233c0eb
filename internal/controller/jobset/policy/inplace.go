package policy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

// DefaultAgentTimeout is how long an in-place restart may make no progress
// while running pods lag behind before it falls back to recreating.
const DefaultAgentTimeout = 60 * time.Second

// InPlacePod is what the in-place restart reads of one running pod.
type InPlacePod struct {
	Name string
	// Attempt is the pod's in-place-restart-attempt annotation, as its
	// agent wrote it; nil while the agent has not (or wrote nonsense).
	Attempt *int32
	// Restarts is the highest restartCount among the pod's containers.
	Restarts int32
}

func InPlace(js *api.JobSet) bool {
	return js.Spec.FailurePolicy != nil && js.Spec.FailurePolicy.RestartStrategy == api.InPlaceRestart
}

// expectedPods is replicas x parallelism summed over the replicated jobs
// (the webhook makes completions equal parallelism).
func expectedPods(js *api.JobSet) int {
	n := 0
	for _, rj := range js.Spec.ReplicatedJobs {
		n += int(rj.Replicas) * int(ptr.Deref(rj.Template.Spec.Parallelism, 1))
	}
	return n
}

// restartInPlace is Decide's step for an in-place JobSet: failed Jobs are
// recreated alone, the pods' attempts are synchronised, and a restart that
// cannot go on in place falls back to recreating. It reports whether the
// JobSet failed or restarts as a whole (Decide stops there).
func restartInPlace(o Observed, c children, e *statusEditor, p *Plan) bool {
	js := o.JobSet
	if len(c.failed) > 0 {
		recreate := recreateFailed(js, c, e)
		if _, done := finished(e.status); done != nil {
			return true
		}
		p.Delete = append(p.Delete, recreate...)
	}
	if ptr.Deref(js.Spec.Suspend, false) || len(c.previous) > 0 {
		return false // suspended, or recreating: no agent to wait for
	}
	timeout := o.AgentTimeout
	if timeout == 0 {
		timeout = DefaultAgentTimeout
	}
	if decideInPlace(js, o.Pods, timeout, e) {
		if _, done := finished(e.status); done == nil {
			if e.status.RestartsCountTowardsMax+sumJobRestartsTowardsMax(js) >= js.Spec.FailurePolicy.MaxRestarts {
				e.fail(api.ReachedMaxRestartsReason, api.ReachedMaxRestartsMessage)
			} else {
				reason := api.AgentTimeoutReason
				if cond := meta.FindStatusCondition(e.status.Conditions, string(api.JobSetInPlaceRestarting)); cond != nil {
					reason = cond.Reason // AgentTimeout or AgentMissing
				}
				restartAll(e, o.Gates, true, reason)
			}
		}
		return true
	}
	if cond := meta.FindStatusCondition(e.status.Conditions, string(api.JobSetInPlaceRestarting)); cond != nil && cond.Status == metav1.ConditionTrue {
		p.RequeueAfter = timeout // the agents' deadline, unless progress comes first
	}
	return false
}

// decideInPlace is upstream's in-place protocol (KEP-467) as a pure step:
//   - all expected pods at one attempt: that is the current attempt, and
//     the agents release their barriers together;
//   - pods at different attempts: every attempt below the highest is
//     previous, so agents still in one restart their pods in place;
//   - an attempt or a container restart count beyond maxRestarts fails it.
//
// Ahead of upstream, it never waits without a condition that says for what
// (InPlaceRestarting), and a missing or broken agent falls back to
// recreating every Job instead of hanging: when running pods lag behind the
// highest attempt and nothing has moved for timeout, or when no agent ever
// reported and a pod's containers restarted.
// It reports stop: the JobSet failed, or must be recreated.
func decideInPlace(js *api.JobSet, pods []InPlacePod, timeout time.Duration, e *statusEditor) (stop bool) {
	fp, st := js.Spec.FailurePolicy, e.status
	var attempts []int32
	var restarts int32
	for _, p := range pods {
		restarts = max(restarts, p.Restarts)
		if p.Attempt != nil {
			attempts = append(attempts, *p.Attempt)
		}
	}
	if restarts > fp.MaxRestarts {
		// A container failing so fast that no attempt completes.
		e.fail(api.ReachedMaxRestartsReason, api.ReachedMaxRestartsMessage)
		return true
	}
	expected := expectedPods(js)
	cond := meta.FindStatusCondition(st.Conditions, string(api.JobSetInPlaceRestarting))
	if len(attempts) == 0 {
		return noAgents(len(pods) == expected, restarts, cond, timeout, e)
	}
	highest := slices.Max(attempts)
	if highest-(st.Restarts-st.RestartsCountTowardsMax) > fp.MaxRestarts {
		e.fail(api.ReachedMaxRestartsReason, api.ReachedMaxRestartsMessage)
		return true
	}
	if len(attempts) == expected && slices.Min(attempts) == highest {
		if st.CurrentInPlaceRestartAttempt == nil || *st.CurrentInPlaceRestartAttempt != highest {
			st.CurrentInPlaceRestartAttempt = ptr.To(highest)
			e.changed = true
		}
		if highest > 0 || cond != nil {
			e.put(api.JobSetInPlaceRestarting, metav1.ConditionFalse, api.AllPodsRestartedReason,
				fmt.Sprintf("attempt %d: all %d pods are in it and were released together", highest, expected), corev1.EventTypeNormal)
		}
		return false
	}
	if highest == 0 {
		return false // first start: agents are still coming up
	}
	if prev := highest - 1; st.PreviousInPlaceRestartAttempt == nil || *st.PreviousInPlaceRestartAttempt < prev {
		st.PreviousInPlaceRestartAttempt = ptr.To(prev)
		e.changed = true
	}
	msg, lagging := progress(pods, highest, expected)
	if waitFor(cond, msg, e) || lagging == 0 || e.now.Sub(cond.LastTransitionTime.Time) < timeout {
		return false // waiting for capacity is the placement's to report
	}
	e.set(api.JobSetInPlaceRestarting, metav1.ConditionFalse, api.AgentTimeoutReason,
		fmt.Sprintf("%s for %s: the in-place restart agent is missing or stuck there; recreating every Job instead", msg, timeout), corev1.EventTypeWarning)
	return true
}

// progress says how far an in-place restart to attempt highest is, and
// how many running pods lag behind it.
func progress(pods []InPlacePod, highest int32, expected int) (msg string, lagging int) {
	var names []string
	for _, p := range pods {
		if p.Attempt == nil || *p.Attempt < highest {
			names = append(names, p.Name)
		}
	}
	msg = fmt.Sprintf("attempt %d: %d of %d pods in it", highest, len(pods)-len(names), expected)
	if len(names) > 0 {
		msg += fmt.Sprintf("; %d running pods not yet (%s)", len(names), first(names, 3))
	}
	if len(pods) < expected {
		msg += fmt.Sprintf("; %d pods not running yet", expected-len(pods))
	}
	return msg, len(names)
}

// noAgents handles a JobSet whose running pods carry no attempt at all.
// Once every pod has run for timeout without one, the agent is missing:
// the JobSet then restarts as with Recreate (stop) whenever a pod's
// containers restart, since nothing would bring the other pods along.
func noAgents(allRunning bool, restarts int32, cond *metav1.Condition, timeout time.Duration, e *statusEditor) bool {
	if !allRunning {
		return false
	}
	if cond != nil && cond.Reason == api.AgentMissingReason {
		return restarts > 0
	}
	msg := "attempt 0: no pod has reported it yet (annotation " + api.InPlaceRestartAttemptKey + ", written by the agent)"
	if waitFor(cond, msg, e) || e.now.Sub(cond.LastTransitionTime.Time) < timeout {
		return false
	}
	e.set(api.JobSetInPlaceRestarting, metav1.ConditionFalse, api.AgentMissingReason,
		fmt.Sprintf("no pod reported an in-place restart attempt within %s: add the agent (`multislice agent`) as a sidecar, see docs/auto-repair.md; until then a failed pod restarts every Job (as Recreate)", timeout),
		corev1.EventTypeWarning)
	return false
}

// waitFor writes InPlaceRestarting True with msg when it says anything
// else, restarting its clock (progress restarts the timeout); it reports
// whether it did.
func waitFor(cond *metav1.Condition, msg string, e *statusEditor) bool {
	if cond != nil && cond.Status == metav1.ConditionTrue && cond.Message == msg {
		return false
	}
	meta.RemoveStatusCondition(&e.status.Conditions, string(api.JobSetInPlaceRestarting))
	e.put(api.JobSetInPlaceRestarting, metav1.ConditionTrue, api.WaitingForPodsReason, msg, "")
	return true
}

func first(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:n], ", ") + fmt.Sprintf(", ... (%d in all)", len(names))
}
