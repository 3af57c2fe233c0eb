package policy

import (
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

// rescaled returns copies of the active Jobs whose parallelism or
// completions no longer match their replicated job (ElasticJobSet gate),
// carrying the new values. Like upstream, a template whose parallelism and
// completions differ (or are unset) is never pushed: the Job API would
// refuse it for an elastic Indexed Job.
func rescaled(js *api.JobSet, active []*batchv1.Job) []*batchv1.Job {
	var out []*batchv1.Job
	for _, j := range active {
		if j.DeletionTimestamp != nil {
			continue
		}
		for i := range js.Spec.ReplicatedJobs {
			rj := &js.Spec.ReplicatedJobs[i]
			if rj.Name != j.Labels[api.ReplicatedJobNameKey] {
				continue
			}
			want := rj.Template.Spec
			if want.Parallelism == nil || want.Completions == nil || !ptr.Equal(want.Parallelism, want.Completions) ||
				ptr.Equal(j.Spec.Parallelism, want.Parallelism) && ptr.Equal(j.Spec.Completions, want.Completions) {
				continue
			}
			c := j.DeepCopy()
			c.Spec.Parallelism, c.Spec.Completions = ptr.To(*want.Parallelism), ptr.To(*want.Completions)
			out = append(out, c)
		}
	}
	return out
}

// scaleStage rescales the active Jobs whose replicated job changed size.
func scaleStage(d *decision) bool {
	if d.o.Gates.ElasticJobSet {
		d.p.Scale = rescaled(d.js, d.c.active)
	}
	return false
}
