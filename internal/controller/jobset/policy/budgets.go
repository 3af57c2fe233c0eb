package policy

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/features"
)

// Restart budgets (RestartBudgets gate; kubernetes-sigs/jobset #976 and
// #1129 B, designed upstream, built by nobody): a replicated job's own
// failurePolicy.maxRestarts bounds the counted restarts its failures
// cause, so a flaky data loader cannot burn the trainer's budget; and a
// restart the infrastructure caused (slice health failed the slice, a
// hot-swap took the pools) counts only in status.infrastructureRestarts,
// bounded by failurePolicy.maxInfrastructureRestarts (unset: unlimited).
// The JobSet's own maxRestarts still bounds every counted restart.

// causedByInfrastructure: the Job failed because its slice did (slice
// health's reason), not because of what runs on it.
func causedByInfrastructure(j *batchv1.Job) bool {
	c := jobCondition(j, batchv1.JobFailed)
	return c != nil && c.Reason == api.SliceUnhealthyReason
}

// spendBudget charges one restart caused by job's failure: to the
// infrastructure's count, or (counted) to its replicated job's budget. It
// fails the JobSet and returns false when that budget is spent.
func spendBudget(js *api.JobSet, e *statusEditor, gates features.Gates, counts, infra bool, job *batchv1.Job) bool {
	if !gates.RestartBudgets {
		return true
	}
	if infra {
		return spendInfrastructure(js, e, withFirstFailed("the infrastructure failed", job))
	}
	rjob := job.Labels[api.ReplicatedJobNameKey]
	if !counts {
		return true
	}
	for i := range e.status.ReplicatedJobsStatus {
		s := &e.status.ReplicatedJobsStatus[i]
		if s.Name != rjob {
			continue
		}
		if max, ok := budgetOf(js, rjob); ok && s.RestartsCountTowardsMax >= max {
			e.fail(api.ReachedReplicatedJobMaxRestartsReason, withFirstFailed(fmt.Sprintf(
				"jobset failed: replicated job %s reached its failurePolicy.maxRestarts (%d restarts caused by its failures)", rjob, max), job))
			return false
		}
		s.RestartsCountTowardsMax++
		e.changed = true
	}
	return true
}

// spendInfrastructure counts a restart the infrastructure caused; false
// (the JobSet failed) once failurePolicy.maxInfrastructureRestarts is spent.
func spendInfrastructure(js *api.JobSet, e *statusEditor, cause string) bool {
	if fp := js.Spec.FailurePolicy; fp != nil && fp.MaxInfrastructureRestarts != nil && e.status.InfrastructureRestarts >= *fp.MaxInfrastructureRestarts {
		e.fail(api.ReachedMaxInfrastructureRestartsReason, fmt.Sprintf(
			"jobset failed: failurePolicy.maxInfrastructureRestarts (%d) reached: %s", *fp.MaxInfrastructureRestarts, cause))
		return false
	}
	e.status.InfrastructureRestarts++
	e.changed = true
	return true
}

func budgetOf(js *api.JobSet, rjob string) (int32, bool) {
	for _, rj := range js.Spec.ReplicatedJobs {
		if rj.Name == rjob && rj.FailurePolicy != nil {
			return rj.FailurePolicy.MaxRestarts, true
		}
	}
	return 0, false
}
