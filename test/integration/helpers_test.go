package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/test/framework"
)

// wait bounds every wait for the manager to act.
const wait = 20 * time.Second

func create(t *testing.T, env *framework.Env, js *api.JobSet) {
	t.Helper()
	if err := env.Client.Create(context.Background(), js); err != nil {
		t.Fatalf("create jobset: %v", err)
	}
}

func waitJobs(t *testing.T, env *framework.Env, ns, name string, n int) []batchv1.Job {
	t.Helper()
	var jobs []batchv1.Job
	framework.Eventually(t, wait, func(context.Context) (bool, string) {
		jobs = env.CurrentJobs(t, ns, name)
		return len(jobs) == n, fmt.Sprintf("%d jobs, want %d", len(jobs), n)
	})
	return jobs
}

func waitCondition(t *testing.T, env *framework.Env, ns, name string, typ api.JobSetConditionType, status metav1.ConditionStatus, reason string) *api.JobSet {
	t.Helper()
	var js *api.JobSet
	framework.Eventually(t, wait, func(context.Context) (bool, string) {
		js = env.Get(t, ns, name)
		c := meta.FindStatusCondition(js.Status.Conditions, string(typ))
		return c != nil && c.Status == status && c.Reason == reason, fmt.Sprintf("conditions %+v", js.Status.Conditions)
	})
	return js
}

// restart waits for attempt's Jobs (jobs of them), collecting the old
// attempt's garbage meanwhile, and returns the current Jobs.
func restart(t *testing.T, env *framework.Env, ns, name string, attempt, jobs int) []batchv1.Job {
	t.Helper()
	framework.Eventually(t, wait, func(context.Context) (bool, string) {
		env.CollectGarbage(t, ns)
		var current []batchv1.Job
		for _, j := range env.CurrentJobs(t, ns, name) {
			if j.Labels[api.RestartsKey] == fmt.Sprint(attempt) {
				current = append(current, j)
			}
		}
		return len(current) == jobs, fmt.Sprintf("%d jobs of attempt %d", len(current), attempt)
	})
	return env.CurrentJobs(t, ns, name)
}
