package policy

import (
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

const (
	// ChildPodsCreated is False while the Job controller cannot create the
	// pods of a child Job (admission refused them, a quota, a missing
	// ServiceAccount or PriorityClass): the Job exists, holds its domain and
	// would wait in silence for ever. Upstream says nothing in this case.
	// It is written only once such a failure is seen.
	ChildPodsCreated api.JobSetConditionType = "ChildPodsCreated"
	// PodCreationFailedReason is its reason while pods cannot be created,
	// and TopologyAssigned's once the domains are released for it.
	PodCreationFailedReason = "PodCreationFailed"

	// podsExpectedWithin is how long a new child Job may have no pod before
	// the Job controller's FailedCreate events are read.
	podsExpectedWithin = 5 * time.Second
	// podCreationGrace is how long a JobSet whose pods cannot be created
	// keeps its domains: then its Jobs go and others may have them.
	podCreationGrace = 30 * time.Second
	// podCreationRetry is how long after releasing its domains the JobSet
	// tries again (the cause, e.g. a missing ServiceAccount, may be fixed).
	podCreationRetry = 60 * time.Second
)

// PodRefusal is a child Job whose pods the Job controller cannot create,
// with its last FailedCreate message.
type PodRefusal struct {
	Job, Message string
}

// Podless are the active child Jobs that should have pods by now and have
// none: not suspended, not finished, older than podsExpectedWithin.
func Podless(jobs []*batchv1.Job, now time.Time) []*batchv1.Job {
	var out []*batchv1.Job
	for _, j := range jobs {
		if awaitsPods(j) && now.Sub(j.CreationTimestamp.Time) >= podsExpectedWithin {
			out = append(out, j)
		}
	}
	return out
}

// awaitsPods: a running Job that has no pod, active or finished.
func awaitsPods(j *batchv1.Job) bool {
	s := j.Status
	return j.DeletionTimestamp == nil && !ptr.Deref(j.Spec.Suspend, false) && api.JobOutcome(j) == "" &&
		s.Active+s.Succeeded+s.Failed+ptr.Deref(s.Terminating, 0) == 0
}

// decidePodCreation says that pods cannot be created and, once that has
// lasted podCreationGrace, lets the domains go: the plan deletes the active
// Jobs and the JobSet tries again podCreationRetry later. It reports
// whether the plan is complete (nothing to create now).
func decidePodCreation(o Observed, active []*batchv1.Job, placed bool, e *statusEditor, p *Plan) bool {
	cond := meta.FindStatusCondition(e.status.Conditions, string(ChildPodsCreated))
	if o.PodsRefused == nil {
		if cond != nil && cond.Status == metav1.ConditionFalse && anyPods(active) {
			e.set(ChildPodsCreated, metav1.ConditionTrue, "PodsCreated", "the child Jobs' pods are created", corev1.EventTypeNormal)
		}
		return retryLater(o.Now, e, p)
	}
	msg := fmt.Sprintf("the Job controller cannot create the pods of job %s: %s", o.PodsRefused.Job, o.PodsRefused.Message)
	if placed {
		msg += fmt.Sprintf("; the JobSet's domains are released %s after the first failure and it tries again %s later", podCreationGrace, podCreationRetry)
	}
	e.put(ChildPodsCreated, metav1.ConditionFalse, PodCreationFailedReason, msg, corev1.EventTypeWarning)
	if !placed {
		return false
	}
	since := meta.FindStatusCondition(e.status.Conditions, string(ChildPodsCreated)).LastTransitionTime.Time
	if wait := since.Add(podCreationGrace).Sub(o.Now); wait > 0 {
		requeue(p, wait)
		return false
	}
	p.Delete = append(p.Delete, notDeleting(active)...)
	p.ReleaseDomains = true
	e.put(TopologyAssigned, metav1.ConditionFalse, PodCreationFailedReason,
		fmt.Sprintf("domains released: the pods of job %s cannot be created (see ChildPodsCreated)", o.PodsRefused.Job), "")
	requeue(p, podCreationRetry)
	return true
}

// retryLater holds back the Jobs of a JobSet whose domains were released
// because its pods could not be created, until podCreationRetry has passed.
func retryLater(now time.Time, e *statusEditor, p *Plan) bool {
	c := meta.FindStatusCondition(e.status.Conditions, string(TopologyAssigned))
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != PodCreationFailedReason {
		return false
	}
	if wait := c.LastTransitionTime.Add(podCreationRetry).Sub(now); wait > 0 {
		requeue(p, wait)
		return true
	}
	return false
}

// expectPods comes back when a Job without pods should have them, to read
// why it has none.
func expectPods(active []*batchv1.Job, now time.Time, p *Plan) {
	for _, j := range active {
		if !awaitsPods(j) {
			continue
		}
		requeue(p, max(j.CreationTimestamp.Add(podsExpectedWithin).Sub(now), podsExpectedWithin))
		return
	}
}

func anyPods(jobs []*batchv1.Job) bool {
	for _, j := range jobs {
		if s := j.Status; s.Active+s.Succeeded+s.Failed > 0 {
			return true
		}
	}
	return false
}

// requeue asks for a reconcile within d (the earliest request wins).
func requeue(p *Plan, d time.Duration) {
	if p.RequeueAfter == 0 || d < p.RequeueAfter {
		p.RequeueAfter = d
	}
}

// podCreationStage watches a running JobSet's Jobs that have no pods:
// those the Job controller cannot create pods for say so and, after a
// grace, let their domains go (decidePodCreation); the others are looked
// at again when they should have pods.
func podCreationStage(d *decision) bool {
	if d.suspended {
		return false
	}
	placed := meta.IsStatusConditionTrue(d.p.Status.Conditions, string(TopologyAssigned))
	if decidePodCreation(d.o, d.c.active, placed, d.e, &d.p) {
		return true
	}
	if d.o.PodsRefused == nil {
		expectPods(d.c.active, d.o.Now, &d.p)
	}
	return false
}
