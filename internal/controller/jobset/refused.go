package jobset

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
)

// refusal returns the API server's refusal among the errors of creating
// child Jobs, when it is one that retrying the same Job cannot cure
// (invalid, forbidden, bad request); "" for anything transient.
func refusal(err error) string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return ""
	}
	if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err) {
		return status.Status().Message
	}
	return ""
}

// afterCreate is the step of the decision that needs the API server's
// answer to creating p.Create: a refusal that retrying cannot cure goes
// into the status, and a placed JobSet lets its domains go (true: memory
// must change, p.ReleaseDomains says how); success after a refusal flips
// ChildJobsCreated back.
func afterCreate(p *Plan, createErr error, now time.Time) (remember bool) {
	if createErr != nil {
		why := refusal(createErr)
		if why == "" {
			return false // transient: retried with backoff
		}
		// Never runnable as it stands: say so, and let others have its domains.
		placed := meta.FindStatusCondition(p.Status.Conditions, string(TopologyAssigned)) != nil
		noteRefusal(&p.Status, why, placed, now)
		p.StatusChanged, p.ReleaseDomains = true, placed
		p.HoldDomains, p.WaitForDomains = nil, nil
		return placed
	}
	if len(p.Create) > 0 && meta.FindStatusCondition(p.Status.Conditions, string(ChildJobsCreated)) != nil {
		noteCreated(&p.Status, now)
		p.StatusChanged = true
	}
	return false
}

// noteRefusal records in status that the child Jobs are refused and, when
// the JobSet was placed, that its domains were let go for others.
func noteRefusal(status *api.JobSetStatus, why string, placed bool, now time.Time) {
	e := newStatusEditor(status, now)
	e.put(ChildJobsCreated, metav1.ConditionFalse, JobCreationRefusedReason,
		fmt.Sprintf("the API server refuses the child Jobs: %s. The JobSet retries with backoff; replicatedJobs cannot change on a running JobSet, so delete it and create it with a template the API server accepts", why), "")
	if placed {
		e.put(TopologyAssigned, metav1.ConditionFalse, JobCreationRefusedReason, "domains released: the API server refuses the child Jobs (see ChildJobsCreated)", "")
	}
}

// noteCreated flips ChildJobsCreated back to True once Jobs are created
// after a refusal (e.g. a policy that forbade them was lifted).
func noteCreated(status *api.JobSetStatus, now time.Time) {
	newStatusEditor(status, now).set(ChildJobsCreated, metav1.ConditionTrue, "JobsCreated", "the child Jobs are created", corev1.EventTypeNormal)
}
