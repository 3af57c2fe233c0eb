package policy

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/testobj"
)

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func jobSet(replicas int32, edit ...func(*api.JobSet)) *api.JobSet {
	b := testobj.NewJobSet("ns", "js").ReplicatedJob("w", replicas, 2).Edit(func(js *api.JobSet) {
		js.UID = "uid-1"
		js.Spec.Network = &api.Network{EnableDNSHostnames: ptr.To(true)}
	})
	for _, e := range edit {
		b.Edit(e)
	}
	return b.Obj()
}

// childJobs builds the current Jobs of js, with outcome per index ("" active,
// its pods created).
func childJobs(js *api.JobSet, outcomes ...batchv1.JobConditionType) []*batchv1.Job {
	var out []*batchv1.Job
	for _, id := range identities(js) {
		j := constructJob(js, id, false, nil)
		if id.index < len(outcomes) && outcomes[id.index] != "" {
			j.Status.Conditions = []batchv1.JobCondition{{Type: outcomes[id.index], Status: corev1.ConditionTrue,
				Reason: "BackoffLimitExceeded", LastTransitionTime: metav1.NewTime(now.Add(time.Duration(-id.index) * time.Second))}}
		} else {
			j.Status.Active = ptr.Deref(j.Spec.Parallelism, 1)
		}
		out = append(out, j)
	}
	return out
}

// outline is what a TestDecide case checks of a Plan: which Jobs each
// action names, the counters, the case's condition and the events.
type outline struct {
	Create, Pending, Delete []string
	Service                 bool
	Restarts, TowardsMax    int32
	Terminal                string
	Condition               string // "Status Reason: Message" of the case's condition type
	Events                  []string
	PodsGrace               string // "" when unset
	Requeue                 time.Duration
	DeleteJobSet            bool
}

func outlineOf(p Plan, condition api.JobSetConditionType) outline {
	o := outline{Create: names(p.Create), Pending: names(p.Pending), Delete: names(p.Delete), Service: p.Service != nil,
		Restarts: p.Status.Restarts, TowardsMax: p.Status.RestartsCountTowardsMax, Terminal: p.Status.TerminalState,
		Requeue: p.RequeueAfter, DeleteJobSet: p.DeleteJobSet}
	if c := meta.FindStatusCondition(p.Status.Conditions, string(condition)); c != nil {
		o.Condition = fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
	}
	for _, e := range p.Events {
		o.Events = append(o.Events, e.Reason)
	}
	if p.DeletePodsGrace != nil {
		o.PodsGrace = fmt.Sprint(*p.DeletePodsGrace)
	}
	return o
}

func TestDecide(t *testing.T) {
	restartable := func(max int32, edit ...func(*api.JobSet)) *api.JobSet {
		return jobSet(2, append([]func(*api.JobSet){func(js *api.JobSet) {
			js.Spec.FailurePolicy = &api.FailurePolicy{MaxRestarts: max}
			js.Annotations = map[string]string{api.RestartGracePeriodAnnotation: "0"}
		}}, edit...)...)
	}
	attempt := func(js *api.JobSet, n int32) *api.JobSet {
		js = js.DeepCopy()
		js.Status.Restarts, js.Status.RestartsCountTowardsMax = n, n
		return js
	}
	going := func(jobs []*batchv1.Job) []*batchv1.Job { // already being deleted: not deleted again
		for _, j := range jobs {
			j.DeletionTimestamp = ptr.To(metav1.NewTime(now))
		}
		return jobs
	}
	finished := func(typ string, ago time.Duration) func(*api.JobSet) {
		return func(js *api.JobSet) {
			js.Spec.TTLSecondsAfterFinished = ptr.To(int32(60))
			js.Status.Conditions = []metav1.Condition{{Type: typ, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-ago))}}
		}
	}
	blocking := restartable(3, func(js *api.JobSet) { js.Spec.FailurePolicy.RestartStrategy = api.BlockingRecreate })
	anyPolicy := jobSet(3, func(js *api.JobSet) { js.Spec.SuccessPolicy = &api.SuccessPolicy{Operator: api.OperatorAny} })
	ttl := jobSet(1, finished("Completed", 20*time.Second))

	for _, c := range []struct {
		name      string
		js        *api.JobSet
		jobs      []*batchv1.Job
		at        time.Duration // after now
		fresh     bool          // no Service yet
		condition api.JobSetConditionType
		want      outline
	}{{
		name: "a new JobSet creates every Job and its Service",
		js:   jobSet(3), fresh: true,
		want: outline{Create: []string{"js-w-0", "js-w-1", "js-w-2"}, Service: true},
	}, {
		name: "without a failure policy the first failure fails the JobSet, naming the earliest failed Job",
		js:   jobSet(3), jobs: childJobs(jobSet(3), "", batchv1.JobFailed, batchv1.JobFailed), condition: "Failed",
		want: outline{Terminal: "Failed", Condition: "True FailedJobs: jobset failed due to one or more job failures (first failed job: js-w-2)",
			Events: []string{"FailedJobs"}},
	}, {
		name: "RestartJobSet bumps restarts and creates nothing in the same pass",
		js:   restartable(1), jobs: childJobs(restartable(1), batchv1.JobFailed), condition: "RestartingJobSet",
		want: outline{Restarts: 1, TowardsMax: 1, Condition: "True DefaultFailurePolicy: restarting jobset, attempt 1",
			Events: []string{"RestartJobSetFailurePolicyAction"}},
	}, {
		name: "the next pass recreates a gone Job by name; one still going waits as Pending",
		js:   attempt(restartable(3), 1), jobs: going(childJobs(restartable(3), batchv1.JobFailed)[1:]),
		want: outline{Create: []string{"js-w-0"}, Pending: []string{"js-w-1"}, Restarts: 1, TowardsMax: 1},
	}, {
		name: "an old attempt's Jobs are deleted with their pods, at the annotation's grace; the new ones wait",
		js:   attempt(restartable(3), 1), jobs: childJobs(restartable(3)),
		want: outline{Delete: []string{"js-w-0", "js-w-1"}, Pending: []string{"js-w-0", "js-w-1"}, PodsGrace: "0", Restarts: 1, TowardsMax: 1},
	}, {
		name: "maxRestarts reached fails the JobSet",
		js:   attempt(restartable(1), 1), jobs: attemptJobs(childJobs(restartable(1), batchv1.JobFailed), 1), condition: "Failed",
		want: outline{Restarts: 1, TowardsMax: 1, Terminal: "Failed",
			Condition: "True ReachedMaxRestarts: jobset failed due to reaching max number of restarts (first failed job: js-w-0)", Events: []string{"ReachedMaxRestarts"}},
	}, {
		name: "BlockingRecreate creates nothing while an old Job exists",
		js:   attempt(blocking, 1), jobs: childJobs(blocking)[:1],
		want: outline{Pending: []string{"js-w-0", "js-w-1"}, Delete: []string{"js-w-0"}, PodsGrace: "0", Restarts: 1, TowardsMax: 1},
	}, {
		name: "success policy Any completes on the first completed Job",
		js:   anyPolicy, jobs: childJobs(anyPolicy, "", batchv1.JobComplete), condition: "Completed",
		want: outline{Terminal: "Completed", Condition: "True AllJobsCompleted: jobset completed successfully", Events: []string{"AllJobsCompleted"}},
	}, {
		name: "success policy All waits for every Job",
		js:   jobSet(2), jobs: childJobs(jobSet(2), batchv1.JobComplete), condition: "Completed",
		want: outline{},
	}, {
		name: "a finished JobSet is kept until its TTL runs out",
		js:   ttl,
		want: outline{Requeue: 40 * time.Second},
	}, {
		name: "and deleted after",
		js:   ttl, at: 41 * time.Second,
		want: outline{DeleteJobSet: true},
	}} {
		t.Run(c.name, func(t *testing.T) {
			got := outlineOf(Decide(Observed{JobSet: c.js, Jobs: c.jobs, ServiceExists: !c.fresh,
				Now: now.Add(c.at)}), c.condition)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("plan\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// attemptJobs labels jobs as attempt n's.
func attemptJobs(jobs []*batchv1.Job, n int) []*batchv1.Job {
	for _, j := range jobs {
		j.Labels[api.RestartsKey] = fmt.Sprint(n)
	}
	return jobs
}

func names(jobs []*batchv1.Job) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.Name)
	}
	return out
}
