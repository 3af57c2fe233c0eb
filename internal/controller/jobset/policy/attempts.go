package policy

import (
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

// countExecution keeps status.executionAttempts as upstream counts them
// (KEP-1282, #1283): it starts at status.restarts the first time the
// JobSet runs (0 for a new one; restarts for one that ran before attempts
// were counted), never while it is suspended, and rises by one when a
// suspended JobSet resumes. Restarts add theirs in applyFailurePolicy.
// Each step is tied to a change written in the same status update (the
// Suspended condition, restarts), so a retried reconcile never counts twice.
func countExecution(js *api.JobSet, status *api.JobSetStatus) {
	suspended := ptr.Deref(js.Spec.Suspend, false)
	switch {
	case status.ExecutionAttempts == nil:
		if !suspended {
			status.ExecutionAttempts = ptr.To(status.Restarts)
		}
	case !suspended && conditionTrue(&js.Status, api.JobSetSuspended):
		status.ExecutionAttempts = ptr.To(*status.ExecutionAttempts + 1)
	}
}

// countRestart adds a whole-JobSet restart to executionAttempts.
func countRestart(status *api.JobSetStatus) {
	if status.ExecutionAttempts != nil {
		status.ExecutionAttempts = ptr.To(*status.ExecutionAttempts + 1)
	}
}
