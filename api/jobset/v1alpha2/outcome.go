package v1alpha2

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// JobOutcome returns JobComplete or JobFailed once a child Job's outcome is
// decided, "" while it runs. Since Kubernetes 1.31 a Job sets FailureTarget
// (SuccessCriteriaMet) at once and Failed (Complete) only after all its
// pods have terminated, which can be their whole grace period later;
// upstream JobSet waits for the latter (issue #928). Multislice acts on the
// former: the outcome is the same. The one home of "this Job is finished"
// for the controller, slice health and the views.
func JobOutcome(j *batchv1.Job) batchv1.JobConditionType {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete, batchv1.JobSuccessCriteriaMet:
			return batchv1.JobComplete
		case batchv1.JobFailed, batchv1.JobFailureTarget:
			return batchv1.JobFailed
		}
	}
	return ""
}
