package policy

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

const (
	// ChildJobsCreated is False while the API server refuses the JobSet's
	// child Jobs (a pod template it will never accept, a policy that forbids
	// them), so that a JobSet that cannot run says why instead of waiting
	// in silence. It is written only once such a refusal happens.
	ChildJobsCreated api.JobSetConditionType = "ChildJobsCreated"
	// JobCreationRefusedReason is its reason while Jobs are refused.
	JobCreationRefusedReason = "JobCreationRefused"
	// NoReplicatedJobsReason is its reason for a JobSet with no replicated
	// job: upstream accepts one and creates nothing.
	NoReplicatedJobsReason = "NoReplicatedJobs"

	// refusedRetryFirst and refusedRetryMax space the tries to create Jobs
	// the API server refused: doubling from one second up to five minutes
	// (the cause, e.g. a policy that forbids them, may be lifted).
	refusedRetryFirst = time.Second
	refusedRetryMax   = 5 * time.Minute
)

// JobRefusal is the API server's answer to the reconciler's last try to
// create the JobSet's Jobs, when it refused them for good (invalid,
// forbidden, bad request): a fact the next decision observes.
type JobRefusal struct {
	Message string
	At      time.Time
	// Times counts the refusals in a row.
	Times int
}

// retryAt is when the Jobs are tried again.
func (r *JobRefusal) retryAt() time.Time {
	wait := refusedRetryMax
	if r.Times < 20 {
		wait = min(refusedRetryFirst<<max(r.Times-1, 0), refusedRetryMax)
	}
	return r.At.Add(wait)
}

// refusedStage: the API server refused the Jobs the last decision
// created. Say so; until the retry is due, create nothing and let a placed
// JobSet's domains go for others.
func refusedStage(d *decision) bool {
	r := d.o.JobsRefused
	if r == nil {
		return false
	}
	placed := meta.FindStatusCondition(d.p.Status.Conditions, string(TopologyAssigned)) != nil
	d.e.put(ChildJobsCreated, metav1.ConditionFalse, JobCreationRefusedReason,
		fmt.Sprintf("the API server refuses the child Jobs: %s. The JobSet retries with backoff; replicatedJobs cannot change on a running JobSet, so delete it and create it with a template the API server accepts", r.Message), "")
	retry := r.retryAt()
	if !d.o.Now.Before(retry) {
		return false
	}
	if placed {
		d.e.put(TopologyAssigned, metav1.ConditionFalse, JobCreationRefusedReason, "domains released: the API server refuses the child Jobs (see ChildJobsCreated)", "")
		d.p.ReleaseDomains = true
	}
	requeue(&d.p, retry.Sub(d.o.Now))
	return true
}

// createdAgain flips ChildJobsCreated back to True once every Job exists
// after a refusal (e.g. a policy that forbade them was lifted).
func createdAgain(e *statusEditor) {
	if c := meta.FindStatusCondition(e.status.Conditions, string(ChildJobsCreated)); c != nil && c.Reason == JobCreationRefusedReason {
		e.set(ChildJobsCreated, metav1.ConditionTrue, "JobsCreated", "the child Jobs are created", corev1.EventTypeNormal)
	}
}
