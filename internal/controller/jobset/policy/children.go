package policy

import (
	"sort"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

// children sorts a JobSet's Jobs into upstream's buckets.
type children struct {
	// previous belong to an earlier restart attempt and must go.
	previous []*batchv1.Job
	// active, succeeded and failed belong to the current attempt.
	active, succeeded, failed []*batchv1.Job
	// surplus belong to the current attempt but no longer to the spec: an
	// elastic scale-down lowered their replicated job's replicas.
	surplus []*batchv1.Job
	// byName holds every Job, of any attempt, by name.
	byName map[string]*batchv1.Job
}

func sortChildren(js *api.JobSet, jobs []*batchv1.Job, restartJobGate bool) children {
	c := children{byName: make(map[string]*batchv1.Job, len(jobs))}
	for _, j := range jobs {
		c.byName[j.Name] = j
		if isPrevious(js, j, restartJobGate) {
			c.previous = append(c.previous, j)
			continue
		}
		if !inSpec(js, j) {
			c.surplus = append(c.surplus, j)
			continue
		}
		switch api.JobOutcome(j) {
		case batchv1.JobComplete:
			c.succeeded = append(c.succeeded, j)
		case batchv1.JobFailed:
			c.failed = append(c.failed, j)
		default:
			c.active = append(c.active, j)
		}
	}
	return c
}

// isPrevious: the Job's restart-attempt label is below status.restarts (or,
// with the RestartJob gate, its job-restart-attempt below jobRestarts[idx]).
// A Job with an unreadable label is treated as previous: it is not ours to keep.
func isPrevious(js *api.JobSet, j *batchv1.Job, restartJobGate bool) bool {
	attempt, err := strconv.Atoi(j.Labels[api.RestartsKey])
	if err != nil || int32(attempt) < js.Status.Restarts {
		return true
	}
	if !restartJobGate {
		return false
	}
	idx, err := strconv.Atoi(j.Labels[api.JobIndexKey])
	if err != nil {
		return false
	}
	want := jobRestarts(js, j.Labels[api.ReplicatedJobNameKey], idx)
	got, _ := strconv.Atoi(j.Labels[api.JobRestartsKey])
	return int32(got) < want
}

// inSpec: the Job's replicated job exists and its index is below replicas.
func inSpec(js *api.JobSet, j *batchv1.Job) bool {
	idx, err := strconv.Atoi(j.Labels[api.JobIndexKey])
	if err != nil {
		return true // not ours to judge; upstream keeps such Jobs too
	}
	for _, rj := range js.Spec.ReplicatedJobs {
		if rj.Name == j.Labels[api.ReplicatedJobNameKey] {
			return idx < int(rj.Replicas)
		}
	}
	return false
}

func jobRestarts(js *api.JobSet, rjob string, idx int) int32 {
	for _, s := range js.Status.ReplicatedJobsStatus {
		if s.Name == rjob && idx < len(s.JobRestarts) {
			return s.JobRestarts[idx]
		}
	}
	return 0
}

// jobCondition finds a True condition of type t; for JobFailed it falls
// back to FailureTarget, which carries the same reason and message earlier.
func jobCondition(j *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	var target *batchv1.JobCondition
	for i := range j.Status.Conditions {
		c := &j.Status.Conditions[i]
		if c.Status != corev1.ConditionTrue {
			continue
		}
		if c.Type == t {
			return c
		}
		if t == batchv1.JobFailed && c.Type == batchv1.JobFailureTarget {
			target = c
		}
	}
	return target
}

// jobReady: ready plus succeeded pods reach min(parallelism, completions).
func jobReady(j *batchv1.Job) bool {
	want := ptr.Deref(j.Spec.Parallelism, 1)
	if j.Spec.Completions != nil && *j.Spec.Completions < want {
		want = *j.Spec.Completions
	}
	return ptr.Deref(j.Status.Ready, 0)+j.Status.Succeeded >= want
}

// replicatedJobsStatus counts the current attempt's Jobs per replicated job,
// in spec order, keeping the per-Job restart counters.
func replicatedJobsStatus(js *api.JobSet, c children) []api.ReplicatedJobStatus {
	byRJob := map[string]*api.ReplicatedJobStatus{}
	out := make([]api.ReplicatedJobStatus, len(js.Spec.ReplicatedJobs))
	for i, rj := range js.Spec.ReplicatedJobs {
		out[i].Name = rj.Name
		for _, old := range js.Status.ReplicatedJobsStatus {
			if old.Name == rj.Name {
				out[i].JobRestarts, out[i].JobRestartsCountTowardsMax = old.JobRestarts, old.JobRestartsCountTowardsMax
				out[i].RestartsCountTowardsMax = old.RestartsCountTowardsMax
			}
		}
		byRJob[rj.Name] = &out[i]
	}
	count := func(jobs []*batchv1.Job, f func(*api.ReplicatedJobStatus, *batchv1.Job)) {
		for _, j := range jobs {
			if s := byRJob[j.Labels[api.ReplicatedJobNameKey]]; s != nil {
				f(s, j)
			}
		}
	}
	count(c.succeeded, func(s *api.ReplicatedJobStatus, _ *batchv1.Job) { s.Succeeded++ })
	count(c.failed, func(s *api.ReplicatedJobStatus, _ *batchv1.Job) { s.Failed++ })
	count(c.active, func(s *api.ReplicatedJobStatus, j *batchv1.Job) {
		if jobReady(j) {
			s.Ready++
		}
		if j.Status.Active > 0 {
			s.Active++
		}
		if ptr.Deref(j.Spec.Suspend, false) {
			s.Suspended++
		}
	})
	return out
}

// firstFailed is the failed Job whose Failed condition is oldest.
func firstFailed(jobs []*batchv1.Job) *batchv1.Job {
	sorted := append([]*batchv1.Job(nil), jobs...)
	sort.SliceStable(sorted, func(a, b int) bool {
		return failedAt(sorted[a]).Before(failedAt(sorted[b]))
	})
	if len(sorted) == 0 {
		return nil
	}
	return sorted[0]
}

func failedAt(j *batchv1.Job) time.Time {
	if c := jobCondition(j, batchv1.JobFailed); c != nil {
		return c.LastTransitionTime.Time
	}
	return time.Time{}
}

// sortStage sorts the Jobs by attempt and outcome and counts them into
// replicatedJobsStatus; a new JobSet's TPU advice becomes its events.
func sortStage(d *decision) bool {
	advise(d.js, d.e)
	d.c = sortChildren(d.js, d.o.Jobs, d.o.Gates.RestartJob)
	d.p.Status.ReplicatedJobsStatus = replicatedJobsStatus(d.js, d.c)
	if d.o.Gates.ExecutionAttemptsTracking {
		countExecution(d.js, &d.p.Status)
	}
	return false
}
