package policy

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

// startingInterval and placedInterval space the writes of a JobSet whose
// Jobs are starting: its placement and counts are written together once
// every Job is ready, or startingInterval after the Jobs were created or
// the status last written, whichever comes first. A one-slice JobSet whose
// pods start within 30 s writes its status once, not three times (placed,
// active, ready). In a burst of 60 on two cores, whose pods start over
// 40-50 s, a 5 s hold made it 2.5 writes per JobSet, 30 s 1.9.
// Kueue, which waits for ready counts, sees them at once; the Jobs carry
// the placement (their pins) meanwhile. Only a status that said the
// JobSet waits for capacity is corrected sooner, placedInterval after its
// last write.
const (
	startingInterval = 30 * time.Second
	placedInterval   = 5 * time.Second
)

// inPlaceProgressInterval spaces the writes of an in-place restart's
// progress ("attempt 1: 512 of 1,024 pods in it"): every agent watches its
// JobSet, so each write is one watch event per pod; a quarter of the agent
// timeout at most, since progress restarts it.
func inPlaceProgressInterval(agentTimeout time.Duration) time.Duration {
	if agentTimeout == 0 {
		agentTimeout = DefaultAgentTimeout
	}
	return min(5*time.Second, agentTimeout/4)
}

// batchCounts postpones a status write that changes nothing but counts
// when the last write was less than CountsInterval ago (an in-place
// restart's progress: inPlaceProgressInterval), and holds the placement and
// counts of starting Jobs (startingInterval); the requeue brings it back,
// so the status is at most that stale.
func batchCounts(o Observed, p *Plan) {
	if !p.StatusChanged || o.CountsInterval == 0 {
		return
	}
	old, new := &o.JobSet.Status, &p.Status
	interval, since := o.CountsInterval, o.LastStatusWrite
	counts := onlyCountsChanged(old, new)
	switch placed := onlyPlacedAndCounts(old, new); {
	case (counts || placed) && starting(o.JobSet, old, new):
		switch {
		case since.IsZero():
			interval, since = max(interval, startingInterval), jobsCreated(o, p)
		case placed:
			interval = max(interval, placedInterval)
		default:
			interval = max(interval, startingInterval)
		}
	case counts:
		if inPlaceProgressChanged(old, new) {
			interval = max(interval, inPlaceProgressInterval(o.AgentTimeout))
		}
	default:
		return
	}
	if since.IsZero() {
		return
	}
	if wait := interval - o.Now.Sub(since); wait > 0 {
		p.StatusChanged = false
		if p.RequeueAfter == 0 || wait < p.RequeueAfter {
			p.RequeueAfter = wait
		}
	}
}

// onlyPlacedAndCounts: what changed is the JobSet's placement (TopologyAssigned
// now True, DomainsAssigned) and counts: news the Jobs themselves carry
// (their nodeSelectors), which may ride on the next counts write.
func onlyPlacedAndCounts(old, new *api.JobSetStatus) bool {
	c := meta.FindStatusCondition(new.Conditions, string(TopologyAssigned))
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != api.DomainsAssignedReason ||
		meta.IsStatusConditionTrue(old.Conditions, string(TopologyAssigned)) {
		return false
	}
	a, b := old.DeepCopy(), new.DeepCopy()
	meta.RemoveStatusCondition(&a.Conditions, string(TopologyAssigned))
	meta.RemoveStatusCondition(&b.Conditions, string(TopologyAssigned))
	return onlyCountsChanged(a, b)
}

// starting: the JobSet's Jobs are coming up: it runs (not suspended, no
// in-place restart waiting), its counts only rise, and some Job is not
// ready yet. Falling counts (pods going, which Kueue waits for after an
// eviction) are not held.
func starting(js *api.JobSet, old, new *api.JobSetStatus) bool {
	if ptr.Deref(js.Spec.Suspend, false) || waitingInPlace(new) || allReady(js, new) {
		return false
	}
	for _, n := range new.ReplicatedJobsStatus {
		for _, o := range old.ReplicatedJobsStatus {
			if o.Name == n.Name && (n.Active < o.Active || n.Ready < o.Ready || n.Suspended > o.Suspended) {
				return false
			}
		}
	}
	return true
}

// allReady: every replicated job has all its Jobs ready or succeeded.
func allReady(js *api.JobSet, st *api.JobSetStatus) bool {
	for _, rj := range js.Spec.ReplicatedJobs {
		i := slices.IndexFunc(st.ReplicatedJobsStatus, func(s api.ReplicatedJobStatus) bool { return s.Name == rj.Name })
		if i < 0 || st.ReplicatedJobsStatus[i].Ready+st.ReplicatedJobsStatus[i].Succeeded < rj.Replicas {
			return false
		}
	}
	return true
}

// jobsCreated is when the newest of the JobSet's Jobs was created: now,
// if the plan creates some (zero: it has none).
func jobsCreated(o Observed, p *Plan) time.Time {
	if len(p.Create) > 0 {
		return o.Now
	}
	var newest time.Time
	for _, j := range o.Jobs {
		if t := j.CreationTimestamp.Time; t.After(newest) {
			newest = t
		}
	}
	return newest
}

// onlyCountsChanged: the new status differs from the old only in Job
// counts (ready, succeeded, failed, active, suspended; not the restart
// counters, which later decisions read), or in the progress of an
// in-place restart that keeps waiting (which would otherwise be written
// once per pod that reaches it).
func onlyCountsChanged(old, new *api.JobSetStatus) bool {
	a, b := old.DeepCopy(), new.DeepCopy()
	withoutCounts(a)
	withoutCounts(b)
	if waitingInPlace(a) && waitingInPlace(b) {
		meta.RemoveStatusCondition(&a.Conditions, string(api.JobSetInPlaceRestarting))
		meta.RemoveStatusCondition(&b.Conditions, string(api.JobSetInPlaceRestarting))
	}
	return equality.Semantic.DeepEqual(a, b)
}

// withoutCounts drops st's Job counts, keeping each replicated job's
// restart counters (a replicated job without any is as if not listed).
func withoutCounts(st *api.JobSetStatus) {
	var kept []api.ReplicatedJobStatus
	for _, r := range st.ReplicatedJobsStatus {
		r.Ready, r.Succeeded, r.Failed, r.Active, r.Suspended = 0, 0, 0, 0, 0
		if !equality.Semantic.DeepEqual(r, api.ReplicatedJobStatus{Name: r.Name}) {
			kept = append(kept, r)
		}
	}
	st.ReplicatedJobsStatus = kept
}

// inPlaceProgressChanged: an in-place restart waits before and after, and
// what it says about its progress changed.
func inPlaceProgressChanged(old, new *api.JobSetStatus) bool {
	if !waitingInPlace(old) || !waitingInPlace(new) {
		return false
	}
	a := meta.FindStatusCondition(old.Conditions, string(api.JobSetInPlaceRestarting))
	b := meta.FindStatusCondition(new.Conditions, string(api.JobSetInPlaceRestarting))
	return a.Message != b.Message
}

func waitingInPlace(st *api.JobSetStatus) bool {
	c := meta.FindStatusCondition(st.Conditions, string(api.JobSetInPlaceRestarting))
	return c != nil && c.Status == metav1.ConditionTrue
}

func restartGrace(js *api.JobSet) *int64 {
	v, ok := js.Annotations[api.RestartGracePeriodAnnotation]
	if !ok {
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return nil // the webhook refuses such values; ignore them here
	}
	return &n
}

func notDeleting(jobs []*batchv1.Job) []*batchv1.Job {
	var out []*batchv1.Job
	for _, j := range jobs {
		if j.DeletionTimestamp == nil {
			out = append(out, j)
		}
	}
	return out
}

func allReadyOrSucceeded(js *api.JobSet, st []api.ReplicatedJobStatus) bool {
	for i, rj := range js.Spec.ReplicatedJobs {
		if st[i].Ready+st[i].Succeeded < rj.Replicas {
			return false
		}
	}
	return true
}

// succeeded applies the success policy (default: All of all).
func succeeded(js *api.JobSet, st []api.ReplicatedJobStatus) bool {
	policy := api.SuccessPolicy{Operator: api.OperatorAll}
	if js.Spec.SuccessPolicy != nil {
		policy = *js.Spec.SuccessPolicy
	}
	targeted := func(name string) bool {
		if len(policy.TargetReplicatedJobs) == 0 {
			return true
		}
		for _, t := range policy.TargetReplicatedJobs {
			if t == name {
				return true
			}
		}
		return false
	}
	any, all := false, true
	for i, rj := range js.Spec.ReplicatedJobs {
		if !targeted(rj.Name) {
			continue
		}
		any = any || st[i].Succeeded > 0
		all = all && st[i].Succeeded >= rj.Replicas
	}
	if policy.Operator == api.OperatorAny {
		return any
	}
	return all
}

// ttlExpired: delete the JobSet once ttlSecondsAfterFinished has passed
// since it finished; otherwise come back when it will have.
func ttlExpired(js *api.JobSet, cond *metav1.Condition, now time.Time) (bool, time.Duration) {
	if js.Spec.TTLSecondsAfterFinished == nil || js.DeletionTimestamp != nil {
		return false, 0
	}
	expiry := cond.LastTransitionTime.Add(time.Duration(*js.Spec.TTLSecondsAfterFinished) * time.Second)
	if !now.Before(expiry) {
		return true, 0
	}
	return false, expiry.Sub(now)
}

// recovered settles RestartingJobSet once every Job is ready again, and
// says so in an Event with the time the restart took: the restart's end
// in the JobSet's timeline (the condition keeps upstream's message).
func recovered(e *statusEditor, attempt int32) {
	was := meta.FindStatusCondition(e.status.Conditions, string(api.JobSetRestartingJobSet))
	restarting := was != nil && was.Status == metav1.ConditionTrue
	var since time.Time
	if restarting {
		since = was.LastTransitionTime.Time
	}
	if e.set(api.JobSetRestartingJobSet, metav1.ConditionFalse, api.JobsReadyReason, api.JobsReadyMessage, "") && restarting {
		e.event(corev1.EventTypeNormal, api.JobsReadyReason, fmt.Sprintf("attempt %d: every job is ready again, %s after the restart began",
			attempt, e.now.Sub(since).Round(10*time.Millisecond)))
	}
}

// finishedStage: a JobSet that completed or failed deletes its remaining
// Jobs, and itself once ttlSecondsAfterFinished has passed.
func finishedStage(d *decision) bool {
	_, cond := finished(&d.js.Status)
	if cond == nil {
		return false
	}
	d.p.Delete = notDeleting(d.c.active)
	d.p.DeleteJobSet, d.p.RequeueAfter = ttlExpired(d.js, cond, d.o.Now)
	return true
}

// successStage completes a JobSet whose success policy holds.
func successStage(d *decision) bool {
	if len(d.c.succeeded) > 0 && succeeded(d.js, d.p.Status.ReplicatedJobsStatus) {
		d.e.complete()
		return true
	}
	return false
}
