package policy

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/features"
)

func TestCountExecution(t *testing.T) {
	suspendedCond := []metav1.Condition{{Type: string(api.JobSetSuspended), Status: metav1.ConditionTrue}}
	for _, tc := range []struct {
		name      string
		suspend   bool
		attempts  *int32
		restarts  int32
		condition []metav1.Condition
		want      *int32
	}{
		{name: "new JobSet starts at 0", want: ptr.To(int32(0))},
		{name: "created suspended: unset until it runs", suspend: true, condition: suspendedCond},
		{name: "first resume of a JobSet created suspended is its first start", attempts: nil, condition: suspendedCond, want: ptr.To(int32(0))},
		{name: "upgrade from nil keeps attempts >= restarts", restarts: 3, want: ptr.To(int32(3))},
		{name: "upgrade from nil while suspended: counted on resume, as upstream", suspend: true, restarts: 3, condition: suspendedCond},
		{name: "that resume", restarts: 3, condition: suspendedCond, want: ptr.To(int32(3))},
		{name: "resume after a suspend counts once", attempts: ptr.To(int32(2)), condition: suspendedCond, want: ptr.To(int32(3))},
		{name: "steady state changes nothing", attempts: ptr.To(int32(2)), want: ptr.To(int32(2))},
		{name: "still suspended changes nothing", suspend: true, attempts: ptr.To(int32(2)), condition: suspendedCond, want: ptr.To(int32(2))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := jobSet(1, func(js *api.JobSet) {
				js.Spec.Suspend = ptr.To(tc.suspend)
				js.Status = api.JobSetStatus{ExecutionAttempts: tc.attempts, Restarts: tc.restarts, Conditions: tc.condition}
			})
			st := *js.Status.DeepCopy()
			countExecution(js, &st)
			if !ptr.Equal(st.ExecutionAttempts, tc.want) {
				t.Fatalf("executionAttempts = %v, want %v", ptr.Deref(st.ExecutionAttempts, -1), ptr.Deref(tc.want, -1))
			}
		})
	}
}

func TestDecideDropIn(t *testing.T) {
	all := features.Gates{ElasticJobSet: true, ExecutionAttemptsTracking: true}
	t.Run("a restart counts an execution attempt and labels the next Jobs", func(t *testing.T) {
		js := jobSet(2, func(js *api.JobSet) {
			js.Spec.FailurePolicy = &api.FailurePolicy{MaxRestarts: 3}
			js.Status.ExecutionAttempts = ptr.To(int32(4))
		})
		p := Decide(Observed{JobSet: js, Jobs: childJobs(js, batchv1.JobFailed), Now: now, Gates: all})
		if p.Status.Restarts != 1 || ptr.Deref(p.Status.ExecutionAttempts, -1) != 5 {
			t.Fatalf("restarts %d, executionAttempts %v", p.Status.Restarts, p.Status.ExecutionAttempts)
		}
		js.Status = p.Status
		p = Decide(Observed{JobSet: js, Now: now, Gates: all})
		if len(p.Create) != 2 || p.Create[0].Labels[api.ExecutionAttemptKey] != "5" || p.Create[0].Spec.Template.Annotations[api.ExecutionAttemptKey] != "5" {
			t.Fatalf("created %v with labels %v", names(p.Create), p.Create[0].Labels)
		}
	})
	t.Run("a resume carries the new execution attempt on the Job and its pods", func(t *testing.T) {
		js := jobSet(1, func(js *api.JobSet) {
			js.Status.ExecutionAttempts = ptr.To(int32(0))
			js.Status.Conditions = []metav1.Condition{{Type: string(api.JobSetSuspended), Status: metav1.ConditionTrue}}
		})
		jobs := childJobs(js)
		jobs[0].Spec.Suspend = ptr.To(true)
		p := Decide(Observed{JobSet: js, Jobs: jobs, Now: now, Gates: all})
		if len(p.Resume) != 1 || p.Resume[0].Spec.Template.Labels[api.ExecutionAttemptKey] != "1" || ptr.Deref(p.Status.ExecutionAttempts, -1) != 1 {
			t.Fatalf("resume %v, attempts %v", names(p.Resume), p.Status.ExecutionAttempts)
		}
	})
	t.Run("elastic: new parallelism reaches active Jobs, fewer replicas delete the highest", func(t *testing.T) {
		js := jobSet(3)
		jobs := childJobs(js)
		js.Spec.ReplicatedJobs[0].Replicas = 2
		js.Spec.ReplicatedJobs[0].Template.Spec.Parallelism = ptr.To(int32(4))
		js.Spec.ReplicatedJobs[0].Template.Spec.Completions = ptr.To(int32(4))
		p := Decide(Observed{JobSet: js, Jobs: jobs, Now: now, Gates: all})
		if len(p.Scale) != 2 || *p.Scale[0].Spec.Parallelism != 4 || *p.Scale[0].Spec.Completions != 4 {
			t.Fatalf("scale %v", names(p.Scale))
		}
		if len(p.Delete) != 1 || p.Delete[0].Name != "js-w-2" {
			t.Fatalf("delete %v", names(p.Delete))
		}
		if *jobs[0].Spec.Parallelism != 2 {
			t.Fatal("Decide changed an observed Job")
		}
		p = Decide(Observed{JobSet: js, Jobs: jobs, Now: now, Gates: features.Gates{}})
		if len(p.Scale) != 0 {
			t.Fatalf("scaled without the gate: %v", names(p.Scale))
		}
	})
	t.Run("elastic: unset parallelism or completions are never pushed", func(t *testing.T) {
		js := jobSet(1)
		jobs := childJobs(js)
		js.Spec.ReplicatedJobs[0].Template.Spec.Parallelism, js.Spec.ReplicatedJobs[0].Template.Spec.Completions = nil, nil
		if p := Decide(Observed{JobSet: js, Jobs: jobs, Now: now, Gates: all}); len(p.Scale) != 0 {
			t.Fatalf("scale %v", names(p.Scale))
		}
	})
	t.Run("elastic: more replicas create the missing Jobs", func(t *testing.T) {
		js := jobSet(2)
		jobs := childJobs(js)
		js.Spec.ReplicatedJobs[0].Replicas = 4
		p := Decide(Observed{JobSet: js, Jobs: jobs, Now: now, Gates: all})
		if got := names(p.Create); len(got) != 2 || got[0] != "js-w-2" || got[1] != "js-w-3" {
			t.Fatalf("create %v", got)
		}
	})
}

func TestInOrder(t *testing.T) {
	inOrder := func(js *api.JobSet) {
		js.Spec.StartupPolicy = &api.StartupPolicy{StartupPolicyOrder: api.InOrder}
		js.Spec.ReplicatedJobs = append(js.Spec.ReplicatedJobs, *js.Spec.ReplicatedJobs[0].DeepCopy())
		js.Spec.ReplicatedJobs[1].Name = "v"
		js.Spec.FailurePolicy = &api.FailurePolicy{MaxRestarts: 2}
	}
	t.Run("created suspended: every Job, suspended", func(t *testing.T) {
		js := jobSet(1, inOrder, func(js *api.JobSet) { js.Spec.Suspend = ptr.To(true) })
		p := Decide(Observed{JobSet: js, Now: now})
		if len(p.Create) != 2 || !*p.Create[0].Spec.Suspend || !*p.Create[1].Spec.Suspend {
			t.Fatalf("create %v", names(p.Create))
		}
	})
	t.Run("resume starts the first replicated job only", func(t *testing.T) {
		js := jobSet(1, inOrder)
		jobs := childJobs(js)
		for _, j := range jobs {
			j.Spec.Suspend = ptr.To(true)
		}
		p := Decide(Observed{JobSet: js, Jobs: jobs, Now: now})
		if got := names(p.Resume); len(got) != 1 || got[0] != "js-w-0" {
			t.Fatalf("resume %v", got)
		}
	})
	t.Run("a restart starts in order again", func(t *testing.T) {
		js := jobSet(1, inOrder, func(js *api.JobSet) {
			js.Status.Conditions = []metav1.Condition{{Type: string(api.JobSetStartupPolicyCompleted), Status: metav1.ConditionTrue, Reason: api.InOrderStartupPolicyCompletedReason}}
		})
		p := Decide(Observed{JobSet: js, Jobs: childJobs(js, batchv1.JobFailed), Now: now})
		js.Status = p.Status
		p = Decide(Observed{JobSet: js, Now: now})
		if c := meta.FindStatusCondition(p.Status.Conditions, string(api.JobSetStartupPolicyCompleted)); c == nil || c.Status != metav1.ConditionFalse {
			t.Fatalf("StartupPolicyCompleted %+v in the next attempt", c)
		}
		if got := names(p.Create); len(got) != 1 || got[0] != "js-w-0" {
			t.Fatalf("attempt 1 creates %v, want only js-w-0", got)
		}
	})
}
