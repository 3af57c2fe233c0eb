package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/features"
	"github.com/multislice/multislice/internal/manager"
	"github.com/multislice/multislice/internal/testobj"
	"github.com/multislice/multislice/test/framework"
)

// TestDropIn covers upstream behaviours behind gates, and where we do
// better than upstream: one manager with RestartJob and ElasticJobSet on.
func TestDropIn(t *testing.T) {
	gates := features.Defaults()
	gates.RestartJob, gates.ElasticJobSet, gates.ActiveDeadlineSeconds, gates.MutablePodResources = true, true, true, true
	gates.ExecutionAttemptsTracking = true
	env := framework.StartEnv(t, gates)
	ctx := context.Background()
	update := func(t *testing.T, ns, name string, edit func(*api.JobSet)) error {
		t.Helper()
		var err error
		for range 10 { // the controller writes status meanwhile
			js := env.Get(t, ns, name)
			edit(js)
			if err = env.Client.Update(ctx, js); !apierrors.IsConflict(err) {
				return err
			}
		}
		return err
	}
	jobsBy := func(t *testing.T, ns, name string, f func(batchv1.Job) bool) []batchv1.Job {
		var out []batchv1.Job
		for _, j := range env.CurrentJobs(t, ns, name) {
			if f(j) {
				out = append(out, j)
			}
		}
		return out
	}

	t.Run("elastic: refusals as upstream's", func(t *testing.T) {
		ns := env.Namespace(t)
		js := testobj.NewJobSet(ns, "e").ReplicatedJob("w", 2, 2).Obj()
		if err := env.Client.Create(ctx, js); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			edit func(*api.JobSet)
			want string
		}{
			{"unequal", func(js *api.JobSet) { js.Spec.ReplicatedJobs[0].Template.Spec.Parallelism = ptr.To(int32(3)) },
				"spec.replicatedJobs[0].template.spec.completions: Invalid value: 2: completions must be equal to parallelism for Elastic Indexed Jobs"},
			{"zero", func(js *api.JobSet) {
				js.Spec.ReplicatedJobs[0].Template.Spec.Parallelism, js.Spec.ReplicatedJobs[0].Template.Spec.Completions = ptr.To(int32(0)), ptr.To(int32(0))
			}, "parallelism must be >= 1"},
			{"NonIndexed", func(js *api.JobSet) {}, "spec.replicatedJobs: Forbidden: field is immutable"},
			{"other fields stay immutable", func(js *api.JobSet) {
				js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].Image = "other"
			},
				"spec.replicatedJobs: Forbidden: field is immutable"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if tc.name == "NonIndexed" {
					nonIndexed := testobj.NewJobSet(ns, "non-indexed").ReplicatedJob("w", 1, 2).
						LastReplicatedJob(func(rj *api.ReplicatedJob) { rj.Template.Spec.CompletionMode = ptr.To(batchv1.NonIndexedCompletion) }).Obj()
					if err := env.Client.Create(ctx, nonIndexed); client.IgnoreAlreadyExists(err) != nil {
						t.Fatal(err)
					}
					err := update(t, ns, "non-indexed", func(js *api.JobSet) {
						js.Spec.ReplicatedJobs[0].Template.Spec.Parallelism, js.Spec.ReplicatedJobs[0].Template.Spec.Completions = ptr.To(int32(3)), ptr.To(int32(3))
					})
					if err == nil || !strings.Contains(err.Error(), tc.want) {
						t.Fatalf("error %v, want %q", err, tc.want)
					}
					return
				}
				err := update(t, ns, "e", tc.edit)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want %q", err, tc.want)
				}
			})
		}
	})

	t.Run("elastic: parallelism and replicas reach the child Jobs", func(t *testing.T) {
		ns := env.Namespace(t)
		if err := env.Client.Create(ctx, testobj.NewJobSet(ns, "e").ReplicatedJob("w", 2, 2).Obj()); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, wait, func(context.Context) (bool, string) {
			n := len(env.CurrentJobs(t, ns, "e"))
			return n == 2, fmt.Sprintf("%d jobs", n)
		})
		if err := update(t, ns, "e", func(js *api.JobSet) {
			spec := &js.Spec.ReplicatedJobs[0].Template.Spec
			spec.Parallelism, spec.Completions = ptr.To(int32(4)), ptr.To(int32(4))
			js.Spec.ReplicatedJobs[0].Replicas = 3
		}); err != nil {
			t.Fatalf("scale up refused: %v", err)
		}
		framework.Eventually(t, wait, func(context.Context) (bool, string) {
			jobs := jobsBy(t, ns, "e", func(j batchv1.Job) bool { return *j.Spec.Parallelism == 4 && *j.Spec.Completions == 4 })
			return len(jobs) == 3, fmt.Sprintf("%d of 3 jobs with parallelism 4", len(jobs))
		})
		if err := update(t, ns, "e", func(js *api.JobSet) { js.Spec.ReplicatedJobs[0].Replicas = 1 }); err != nil {
			t.Fatalf("scale down refused: %v", err)
		}
		framework.Eventually(t, wait, func(context.Context) (bool, string) {
			jobs := env.CurrentJobs(t, ns, "e")
			return len(jobs) == 1 && jobs[0].Name == "e-w-0", fmt.Sprintf("%d jobs", len(jobs))
		})
		js := env.Get(t, ns, "e")
		if js.Status.Restarts != 0 || meta.IsStatusConditionTrue(js.Status.Conditions, string(api.JobSetFailed)) {
			t.Fatalf("scaling restarted or failed the JobSet: %+v", js.Status)
		}
	})

	t.Run("elastic: a finished JobSet cannot scale", func(t *testing.T) {
		ns := env.Namespace(t)
		if err := env.Client.Create(ctx, testobj.NewJobSet(ns, "done").ReplicatedJob("w", 1, 1).Obj()); err != nil {
			t.Fatal(err)
		}
		var jobs []batchv1.Job
		framework.Eventually(t, wait, func(context.Context) (bool, string) {
			jobs = env.CurrentJobs(t, ns, "done")
			return len(jobs) == 1, "no job yet"
		})
		env.SetJobStatus(t, &jobs[0], batchv1.JobComplete, "", "")
		framework.Eventually(t, wait, func(context.Context) (bool, string) {
			return env.Get(t, ns, "done").Status.TerminalState == "Completed", "not completed"
		})
		err := update(t, ns, "done", func(js *api.JobSet) {
			js.Spec.ReplicatedJobs[0].Template.Spec.Parallelism, js.Spec.ReplicatedJobs[0].Template.Spec.Completions = ptr.To(int32(2)), ptr.To(int32(2))
		})
		if err == nil || !strings.Contains(err.Error(), "cannot change once the JobSet has finished") {
			t.Fatalf("error %v", err)
		}
	})

	t.Run("InOrder: created suspended gets every Job; resume and restarts start in order", func(t *testing.T) {
		ns := env.Namespace(t)
		js := testobj.NewJobSet(ns, "o").ReplicatedJob("a", 1, 1).ReplicatedJob("b", 2, 1).ReplicatedJob("c", 1, 1).
			FailurePolicy(2).Suspend(true).Edit(func(js *api.JobSet) {
			js.Spec.StartupPolicy = &api.StartupPolicy{StartupPolicyOrder: api.InOrder}
		}).Obj()
		if err := env.Client.Create(ctx, js); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, wait, func(context.Context) (bool, string) {
			jobs := jobsBy(t, ns, "o", func(j batchv1.Job) bool { return ptr.Deref(j.Spec.Suspend, false) })
			return len(jobs) == 4, fmt.Sprintf("%d of 4 jobs created suspended", len(jobs))
		})
		if err := update(t, ns, "o", func(js *api.JobSet) { js.Spec.Suspend = ptr.To(false) }); err != nil {
			t.Fatal(err)
		}
		// resumed: the running Jobs of each step, rjob by rjob.
		running := func(attempt string) map[string]int {
			out := map[string]int{}
			for _, j := range env.CurrentJobs(t, ns, "o") {
				if !ptr.Deref(j.Spec.Suspend, false) && j.Labels[api.RestartsKey] == attempt {
					out[j.Labels[api.ReplicatedJobNameKey]]++
				}
			}
			return out
		}
		stepThrough := func(attempt string) {
			for _, step := range []struct {
				ready string
				want  map[string]int
			}{{"", map[string]int{"a": 1}}, {"a", map[string]int{"a": 1, "b": 2}}, {"b", map[string]int{"a": 1, "b": 2, "c": 1}}} {
				if step.ready != "" {
					for _, j := range env.CurrentJobs(t, ns, "o") {
						if j.Labels[api.ReplicatedJobNameKey] == step.ready {
							env.SetJobStatus(t, &j, "", "", "")
						}
					}
				}
				framework.Eventually(t, wait, func(context.Context) (bool, string) {
					got := running(attempt)
					return fmt.Sprint(got) == fmt.Sprint(step.want), fmt.Sprintf("attempt %s running %v, want %v", attempt, got, step.want)
				})
				time.Sleep(300 * time.Millisecond) // nothing further starts early
				if got := running(attempt); fmt.Sprint(got) != fmt.Sprint(step.want) {
					t.Fatalf("attempt %s running %v, want %v", attempt, got, step.want)
				}
			}
		}
		stepThrough("0")
		c := jobsBy(t, ns, "o", func(j batchv1.Job) bool { return j.Name == "o-c-0" })
		env.SetJobStatus(t, &c[0], "", "", "")
		framework.Eventually(t, wait, func(context.Context) (bool, string) {
			c := meta.FindStatusCondition(env.Get(t, ns, "o").Status.Conditions, string(api.JobSetStartupPolicyCompleted))
			return c != nil && c.Status == metav1.ConditionTrue, "StartupPolicyCompleted not True"
		})
		b := jobsBy(t, ns, "o", func(j batchv1.Job) bool { return j.Name == "o-b-1" })
		env.SetJobStatus(t, &b[0], batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded, "boom")
		framework.Eventually(t, wait, func(context.Context) (bool, string) {
			env.CollectGarbage(t, ns)
			js := env.Get(t, ns, "o")
			c := meta.FindStatusCondition(js.Status.Conditions, string(api.JobSetStartupPolicyInProgress))
			return js.Status.Restarts == 1 && c != nil && c.Status == metav1.ConditionTrue, fmt.Sprintf("restarts %d, conditions %+v", js.Status.Restarts, js.Status.Conditions)
		})
		framework.Eventually(t, wait, func(context.Context) (bool, string) {
			env.CollectGarbage(t, ns)
			got := running("1")
			return fmt.Sprint(got) == "map[a:1]", fmt.Sprintf("attempt 1 running %v", got)
		})
		stepThrough("1")
	})

	t.Run("RestartJob restarts only the failed Job", func(t *testing.T) {
		ns := env.Namespace(t)
		js := testobj.NewJobSet(ns, "r").ReplicatedJob("w", 3, 1).
			FailurePolicy(3, api.FailurePolicyRule{Name: "one", Action: api.RestartJob}).Obj()
		if err := env.Client.Create(ctx, js); err != nil {
			t.Fatal(err)
		}
		var jobs []batchv1.Job
		framework.Eventually(t, wait, func(context.Context) (bool, string) {
			jobs = env.CurrentJobs(t, ns, "r")
			return len(jobs) == 3, fmt.Sprintf("%d jobs", len(jobs))
		})
		uids := map[string]string{}
		for _, j := range jobs {
			uids[j.Name] = string(j.UID)
		}
		env.SetJobStatus(t, &jobs[1], batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded, "x")
		failed := jobs[1].Name
		framework.Eventually(t, wait, func(context.Context) (bool, string) {
			env.CollectGarbage(t, ns)
			again := jobsBy(t, ns, "r", func(j batchv1.Job) bool { return j.Labels[api.JobRestartsKey] == "1" })
			return len(again) == 1 && again[0].Name == failed, fmt.Sprintf("%d jobs at job-restart-attempt 1", len(again))
		})
		for _, j := range env.CurrentJobs(t, ns, "r") {
			if j.Name != failed && string(j.UID) != uids[j.Name] {
				t.Errorf("%s was recreated", j.Name)
			}
		}
		st := env.Get(t, ns, "r").Status
		if st.Restarts != 0 || len(st.ReplicatedJobsStatus) != 1 || fmt.Sprint(st.ReplicatedJobsStatus[0].JobRestarts) != "[0 1 0]" {
			t.Fatalf("status %+v", st)
		}
	})

	t.Run("a repeated warning is one Event series", func(t *testing.T) {
		ns := env.Namespace(t)
		// The apiserver refuses the Job: dnsPolicy is not one it knows.
		js := testobj.NewJobSet(ns, "bad").ReplicatedJob("w", 1, 1).
			LastReplicatedJob(func(rj *api.ReplicatedJob) { rj.Template.Spec.Template.Spec.DNSPolicy = "Bogus" }).Obj()
		if err := env.Client.Create(ctx, js); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, wait, func(context.Context) (bool, string) {
			var events eventsv1.EventList
			if err := env.Client.List(ctx, &events, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			var series []eventsv1.Event
			for _, e := range events.Items {
				if e.Reason == api.JobCreationFailedReason && e.Regarding.Name == "bad" {
					series = append(series, e)
				}
			}
			return len(series) == 1 && series[0].Series != nil && series[0].Series.Count >= 2 && series[0].Type == corev1.EventTypeWarning,
				fmt.Sprintf("%d JobCreationFailed events, series %v", len(series), seriesOf(series))
		})
	})

	t.Run("a template the API server refuses says so in a condition", func(t *testing.T) {
		ns := env.Namespace(t)
		js := testobj.NewJobSet(ns, "refused").ReplicatedJob("w", 1, 1).
			LastReplicatedJob(func(rj *api.ReplicatedJob) { rj.Template.Spec.Template.Spec.DNSPolicy = "Bogus" }).Obj()
		if err := env.Client.Create(ctx, js); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, wait, func(context.Context) (bool, string) {
			c := meta.FindStatusCondition(env.Get(t, ns, "refused").Status.Conditions, "ChildJobsCreated")
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == "JobCreationRefused" && strings.Contains(c.Message, "dnsPolicy"),
				fmt.Sprintf("condition %+v", c)
		})
	})

	t.Run("execution attempts: first start, resume, restart", func(t *testing.T) {
		ns := env.Namespace(t)
		js := testobj.NewJobSet(ns, "x").ReplicatedJob("w", 2, 1).FailurePolicy(3).Obj()
		if err := env.Client.Create(ctx, js); err != nil {
			t.Fatal(err)
		}
		attempt := func(want string) {
			t.Helper()
			framework.Eventually(t, wait, func(context.Context) (bool, string) {
				env.CollectGarbage(t, ns)
				st := env.Get(t, ns, "x").Status
				jobs := jobsBy(t, ns, "x", func(j batchv1.Job) bool {
					return j.Labels[api.ExecutionAttemptKey] == want && j.Annotations[api.ExecutionAttemptKey] == want &&
						j.Spec.Template.Labels[api.ExecutionAttemptKey] == want && j.Spec.Template.Annotations[api.ExecutionAttemptKey] == want
				})
				got := fmt.Sprint(ptr.Deref(st.ExecutionAttempts, -1))
				return got == want && len(jobs) == 2, fmt.Sprintf("executionAttempts %s, %d jobs labelled %s", got, len(jobs), want)
			})
		}
		attempt("0")
		if err := update(t, ns, "x", func(js *api.JobSet) { js.Spec.Suspend = ptr.To(true) }); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, wait, func(context.Context) (bool, string) {
			return meta.IsStatusConditionTrue(env.Get(t, ns, "x").Status.Conditions, string(api.JobSetSuspended)), "not suspended"
		})
		if err := update(t, ns, "x", func(js *api.JobSet) { js.Spec.Suspend = ptr.To(false) }); err != nil {
			t.Fatal(err)
		}
		attempt("1")
		jobs := env.CurrentJobs(t, ns, "x")
		env.SetJobStatus(t, &jobs[0], batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded, "x")
		attempt("2")
		if st := env.Get(t, ns, "x").Status; st.Restarts != 1 {
			t.Fatalf("restarts %d", st.Restarts)
		}
	})

	t.Run("activeDeadlineSeconds: reset by a restart of the whole JobSet (KEP-1186); past it the JobSet fails and its Jobs stop", func(t *testing.T) {
		ns := env.Namespace(t)
		js := testobj.NewJobSet(ns, "d").ReplicatedJob("w", 2, 1).FailurePolicy(3).
			Edit(func(js *api.JobSet) { js.Spec.ActiveDeadlineSeconds = ptr.To(int64(4)) }).Obj()
		if err := env.Client.Create(ctx, js); err != nil {
			t.Fatal(err)
		}
		jobs := waitJobs(t, env, ns, "d", 2)
		// The Jobs are created before the status write that records the
		// start: wait for that write, not only for the Jobs.
		var start *metav1.Time
		framework.Eventually(t, wait, func(context.Context) (bool, string) {
			start = env.Get(t, ns, "d").Status.StartTime
			return start != nil, "status.startTime not set once the JobSet runs"
		})
		time.Sleep(1100 * time.Millisecond) // startTime has a resolution of a second
		env.SetJobStatus(t, &jobs[0], batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded, "x")
		restart(t, env, ns, "d", 1, 2)
		if got := env.Get(t, ns, "d").Status.StartTime; got == nil || !got.After(start.Time) {
			t.Fatalf("status.startTime %v after a restart of the whole JobSet, want one after %v", got, start)
		}
		start = env.Get(t, ns, "d").Status.StartTime
		failed := waitCondition(t, env, ns, "d", api.JobSetFailed, metav1.ConditionTrue, api.DeadlineExceededReason)
		cond := meta.FindStatusCondition(failed.Status.Conditions, string(api.JobSetFailed))
		if ran := cond.LastTransitionTime.Sub(start.Time); ran < 4*time.Second || ran > 7*time.Second || failed.Status.TerminalState != api.TerminalStateFailed {
			t.Errorf("failed %s after the start (deadline 4s), terminal state %q: %s", ran, failed.Status.TerminalState, cond.Message)
		}
		framework.Eventually(t, wait, func(context.Context) (bool, string) {
			n := len(env.CurrentJobs(t, ns, "d"))
			return n == 0, fmt.Sprintf("%d child Jobs not stopped", n)
		})
	})

	t.Run("activeDeadlineSeconds: time suspended does not count", func(t *testing.T) {
		ns := env.Namespace(t)
		js := testobj.NewJobSet(ns, "s").ReplicatedJob("w", 1, 1).Suspend(true).
			Edit(func(js *api.JobSet) { js.Spec.ActiveDeadlineSeconds = ptr.To(int64(3)) }).Obj()
		if err := env.Client.Create(ctx, js); err != nil {
			t.Fatal(err)
		}
		waitCondition(t, env, ns, "s", api.JobSetSuspended, metav1.ConditionTrue, api.SuspendedReason)
		time.Sleep(4 * time.Second) // past the deadline, suspended all along
		if got := env.Get(t, ns, "s"); got.Status.StartTime != nil || meta.FindStatusCondition(got.Status.Conditions, string(api.JobSetFailed)) != nil {
			t.Fatalf("suspended JobSet: startTime %v, conditions %+v", got.Status.StartTime, got.Status.Conditions)
		}
		resumed := time.Now()
		if err := update(t, ns, "s", func(js *api.JobSet) { js.Spec.Suspend = ptr.To(false) }); err != nil {
			t.Fatal(err)
		}
		failed := waitCondition(t, env, ns, "s", api.JobSetFailed, metav1.ConditionTrue, api.DeadlineExceededReason)
		if at := meta.FindStatusCondition(failed.Status.Conditions, string(api.JobSetFailed)).LastTransitionTime; at.Sub(resumed) < 1500*time.Millisecond { // times are whole seconds
			t.Errorf("failed %s after the resume: the suspended time counted", at.Sub(resumed))
		}
	})

	t.Run("pod resources changed while suspended reach the Jobs on resume", func(t *testing.T) {
		ns := env.Namespace(t)
		js := testobj.NewJobSet(ns, "r").ReplicatedJob("w", 2, 1).Suspend(true).Obj()
		if err := env.Client.Create(ctx, js); err != nil {
			t.Fatal(err)
		}
		waitJobs(t, env, ns, "r", 2)
		waitCondition(t, env, ns, "r", api.JobSetSuspended, metav1.ConditionTrue, api.SuspendedReason)
		cpu := resource.MustParse("3")
		if err := update(t, ns, "r", func(js *api.JobSet) {
			c := &js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0]
			c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: cpu}
		}); err != nil {
			t.Fatalf("a resources change while suspended refused: %v", err)
		}
		if err := update(t, ns, "r", func(js *api.JobSet) { js.Spec.Suspend = ptr.To(false) }); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, wait, func(context.Context) (bool, string) {
			jobs := jobsBy(t, ns, "r", func(j batchv1.Job) bool {
				got := j.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
				return !ptr.Deref(j.Spec.Suspend, false) && got.Equal(cpu)
			})
			return len(jobs) == 2, fmt.Sprintf("%d of 2 jobs resumed asking for %s CPU", len(jobs), cpu.String())
		})
		err := update(t, ns, "r", func(js *api.JobSet) {
			js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].Resources.Requests = nil
		})
		if err == nil || !strings.Contains(err.Error(), "field is immutable") {
			t.Fatalf("a resources change while running: error %v, want immutable", err)
		}
	})

	t.Run("re-applying the same manifest without defaults changes nothing", func(t *testing.T) {
		ns := env.Namespace(t)
		manifest := func() *api.JobSet {
			js := testobj.NewJobSet(ns, "again").ReplicatedJob("w", 2, 1).Obj()
			js.Spec.ReplicatedJobs[0].Template.Spec.CompletionMode = nil
			js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.RestartPolicy = ""
			return js
		}
		if err := env.Client.Create(ctx, manifest()); err != nil {
			t.Fatal(err)
		}
		before := env.Get(t, ns, "again")
		// A client-side apply sends the manifest's replicatedJobs whole.
		if err := update(t, ns, "again", func(js *api.JobSet) { js.Spec.ReplicatedJobs = manifest().Spec.ReplicatedJobs }); err != nil {
			t.Fatalf("re-apply refused: %v", err)
		}
		if after := env.Get(t, ns, "again"); after.Generation != before.Generation {
			t.Fatalf("generation %d -> %d", before.Generation, after.Generation)
		}
		err := update(t, ns, "again", func(js *api.JobSet) {
			js.Spec.ReplicatedJobs = manifest().Spec.ReplicatedJobs
			js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].Image = "changed"
		})
		if err == nil || !strings.Contains(err.Error(), "spec.replicatedJobs: Forbidden: field is immutable") {
			t.Fatalf("a real change: error %v", err)
		}
	})
}

func seriesOf(events []eventsv1.Event) []int32 {
	var out []int32
	for _, e := range events {
		if e.Series != nil {
			out = append(out, e.Series.Count)
		}
	}
	return out
}

// TestControllersAndWebhooksApart runs the manager as upstream's suites run
// it: webhooks without the controller, and the controller without webhooks.
func TestControllersAndWebhooksApart(t *testing.T) {
	ctx := context.Background()
	t.Run("webhooks only", func(t *testing.T) {
		env := framework.StartEnvWith(t, func(o *manager.Options) { o.NoControllers = true })
		ns := env.Namespace(t)
		js := testobj.NewJobSet(ns, "w").ReplicatedJob("w", 1, 1).Obj()
		js.Spec.SuccessPolicy = nil
		if err := env.Client.Create(ctx, js); err != nil {
			t.Fatal(err)
		}
		if got := env.Get(t, ns, "w"); got.Spec.SuccessPolicy == nil {
			t.Error("not defaulted")
		}
		time.Sleep(2 * time.Second)
		if n := len(env.Jobs(t, ns, "w")); n != 0 {
			t.Errorf("%d Jobs created with the controller off", n)
		}
	})
	t.Run("controllers only", func(t *testing.T) {
		env := framework.StartEnvWith(t, func(o *manager.Options) { o.NoWebhooks = true })
		ns := env.Namespace(t)
		js := testobj.NewJobSet(ns, "c").ReplicatedJob("w", 2, 1).Obj()
		if err := env.Client.Create(ctx, js); err != nil {
			t.Fatal(err)
		}
		if got := env.Get(t, ns, "c"); got.Spec.SuccessPolicy != nil {
			t.Error("defaulted with the webhooks off")
		}
		framework.Eventually(t, wait, func(context.Context) (bool, string) {
			n := len(env.CurrentJobs(t, ns, "c"))
			return n == 2, fmt.Sprintf("%d jobs", n)
		})
	})
}
