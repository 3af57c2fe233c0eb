package policy

import (
	corev1 "k8s.io/api/core/v1"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/tpujob"
)

// TPUAdviceReason is the Warning event that keeps admission's TPU advice
// (tpujob.Findings.Advice: the workload runs, maybe not as its author
// expects) on the JobSet, where `kubectl describe` and `multislice status`
// show it long after kubectl printed the warning.
const TPUAdviceReason = "TPUAdvice"

// advise records the advice once: with the JobSet's first status write
// (no replicatedJobsStatus yet). A manager that crashes before that write
// records it again, never twice after.
func advise(js *api.JobSet, e *statusEditor) {
	if js.Status.ReplicatedJobsStatus != nil {
		return
	}
	for _, a := range tpujob.CheckJobSet(js).Advice {
		e.event(corev1.EventTypeWarning, TPUAdviceReason, a)
	}
}
