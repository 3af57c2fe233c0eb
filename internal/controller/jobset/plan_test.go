package jobset

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func jobSet(replicas int32, edit ...func(*api.JobSet)) *api.JobSet {
	js := &api.JobSet{
		ObjectMeta: metav1.ObjectMeta{Name: "js", Namespace: "ns", UID: "uid-1"},
		Spec: api.JobSetSpec{
			Network: &api.Network{EnableDNSHostnames: ptr.To(true)},
			ReplicatedJobs: []api.ReplicatedJob{{Name: "w", Replicas: replicas, Template: batchv1.JobTemplateSpec{
				Spec: batchv1.JobSpec{Parallelism: ptr.To(int32(2)), Completions: ptr.To(int32(2))},
			}}},
		},
	}
	for _, e := range edit {
		e(js)
	}
	return js
}

// childJobs builds the current Jobs of js, with outcome per index ("" active).
func childJobs(js *api.JobSet, outcomes ...batchv1.JobConditionType) []*batchv1.Job {
	var out []*batchv1.Job
	for _, id := range identities(js) {
		j := constructJob(js, id, false, nil)
		if id.index < len(outcomes) && outcomes[id.index] != "" {
			j.Status.Conditions = []batchv1.JobCondition{{Type: outcomes[id.index], Status: corev1.ConditionTrue,
				Reason: "BackoffLimitExceeded", LastTransitionTime: metav1.NewTime(now.Add(time.Duration(-id.index) * time.Second))}}
		}
		out = append(out, j)
	}
	return out
}

func TestDecide(t *testing.T) {
	t.Run("a new JobSet creates every Job and its Service", func(t *testing.T) {
		p := Decide(Observed{JobSet: jobSet(3), Now: now})
		if len(p.Create) != 3 || p.Service == nil || !p.StatusChanged {
			t.Fatalf("plan: %d creates, service %v, status changed %v", len(p.Create), p.Service != nil, p.StatusChanged)
		}
		if p.Create[2].Name != "js-w-2" || p.Create[2].Labels[api.RestartsKey] != "0" {
			t.Errorf("job %s labels %v", p.Create[2].Name, p.Create[2].Labels)
		}
	})
	t.Run("without a failure policy the first failure fails the JobSet", func(t *testing.T) {
		js := jobSet(3)
		p := Decide(Observed{JobSet: js, Jobs: childJobs(js, "", batchv1.JobFailed, batchv1.JobFailed), Now: now})
		c := meta.FindStatusCondition(p.Status.Conditions, "Failed")
		// js-w-2 failed a second before js-w-1: it is the first failed job.
		if c == nil || c.Reason != "FailedJobs" || c.Message != "jobset failed due to one or more job failures (first failed job: js-w-2)" ||
			p.Status.TerminalState != "Failed" || len(p.Create) != 0 {
			t.Fatalf("condition %+v, terminal %q, creates %d", c, p.Status.TerminalState, len(p.Create))
		}
	})
	t.Run("RestartJobSet bumps restarts and creates nothing in the same pass", func(t *testing.T) {
		js := jobSet(2, func(js *api.JobSet) { js.Spec.FailurePolicy = &api.FailurePolicy{MaxRestarts: 1} })
		p := Decide(Observed{JobSet: js, Jobs: childJobs(js, batchv1.JobFailed), Now: now})
		c := meta.FindStatusCondition(p.Status.Conditions, "RestartingJobSet")
		if p.Status.Restarts != 1 || p.Status.RestartsCountTowardsMax != 1 || c == nil || c.Reason != "DefaultFailurePolicy" || len(p.Create) != 0 {
			t.Fatalf("status %+v, creates %d", p.Status, len(p.Create))
		}
		if len(p.Events) != 1 || p.Events[0].Reason != "RestartJobSetFailurePolicyAction" {
			t.Errorf("events %+v", p.Events)
		}
	})
	t.Run("the next pass deletes the old attempt and recreates by name", func(t *testing.T) {
		js := jobSet(2, func(js *api.JobSet) {
			js.Spec.FailurePolicy = &api.FailurePolicy{MaxRestarts: 3}
			js.Annotations = map[string]string{api.RestartGracePeriodAnnotation: "0"}
		})
		old := childJobs(js, batchv1.JobFailed)
		js.Status.Restarts = 1
		old[1].DeletionTimestamp = ptr.To(metav1.NewTime(now)) // already going: not deleted again
		p := Decide(Observed{JobSet: js, Jobs: old[1:], Now: now})
		if len(p.Delete) != 0 || len(p.Create) != 1 || p.Create[0].Name != "js-w-0" || len(p.Pending) != 1 || p.Pending[0].Name != "js-w-1" {
			t.Fatalf("delete %d, create %v, pending %v", len(p.Delete), names(p.Create), names(p.Pending))
		}
		p = Decide(Observed{JobSet: js, Jobs: childJobs(jobSet(2)), Now: now})
		if len(p.Delete) != 2 || p.DeletePodsGrace == nil || *p.DeletePodsGrace != 0 {
			t.Fatalf("delete %d, pod grace %v", len(p.Delete), p.DeletePodsGrace)
		}
	})
	t.Run("BlockingRecreate creates nothing while an old Job exists", func(t *testing.T) {
		js := jobSet(2, func(js *api.JobSet) {
			js.Spec.FailurePolicy = &api.FailurePolicy{MaxRestarts: 3, RestartStrategy: api.BlockingRecreate}
		})
		old := childJobs(js)
		js.Status.Restarts = 1
		p := Decide(Observed{JobSet: js, Jobs: old[:1], Now: now})
		if len(p.Create) != 0 || len(p.Pending) != 2 {
			t.Fatalf("create %v pending %v", names(p.Create), names(p.Pending))
		}
	})
	t.Run("TTL after finishing", func(t *testing.T) {
		js := jobSet(1, func(js *api.JobSet) {
			js.Spec.TTLSecondsAfterFinished = ptr.To(int32(60))
			js.Status.Conditions = []metav1.Condition{{Type: "Completed", Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-20 * time.Second))}}
		})
		p := Decide(Observed{JobSet: js, Now: now})
		if p.DeleteJobSet || p.RequeueAfter != 40*time.Second {
			t.Fatalf("delete %v requeue %s", p.DeleteJobSet, p.RequeueAfter)
		}
		p = Decide(Observed{JobSet: js, Now: now.Add(41 * time.Second)})
		if !p.DeleteJobSet {
			t.Fatal("not deleted after the TTL")
		}
	})
	t.Run("success policy Any", func(t *testing.T) {
		js := jobSet(3, func(js *api.JobSet) { js.Spec.SuccessPolicy = &api.SuccessPolicy{Operator: api.OperatorAny} })
		p := Decide(Observed{JobSet: js, Jobs: childJobs(js, "", batchv1.JobComplete), Now: now})
		if p.Status.TerminalState != "Completed" {
			t.Fatalf("status %+v", p.Status)
		}
	})
}

func names(jobs []*batchv1.Job) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.Name)
	}
	return out
}
