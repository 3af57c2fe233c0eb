package jobset

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/controller/jobset/policy"
	"github.com/multislice/multislice/internal/testobj"
)

func TestRecent(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	var r recent[string]
	if r.within("a", t0) {
		t.Fatal("a key never noted is within")
	}
	r.note("a", t0)
	r.note("c", t0)
	r.forget("c") // the cache shows it
	for _, c := range []struct {
		key  string
		at   time.Duration
		want bool
	}{
		{"a", 0, true},
		{"a", recentMemory - time.Millisecond, true},
		{"a", recentMemory, false}, // the cache had time: act again if it still does not show it
		{"b", time.Second, false},
		{"c", time.Second, false},
	} {
		if got := r.within(c.key, t0.Add(c.at)); got != c.want {
			t.Errorf("within(%s) %s after the write = %v, want %v", c.key, c.at, got, c.want)
		}
	}
	// Old entries go once per recentMemory, when a new one is noted.
	r.note("b", t0.Add(2*recentMemory))
	if _, kept := r.at["a"]; kept || len(r.at) != 1 {
		t.Errorf("after a later note: %v, want only b", r.at)
	}
}

// TestNoDecisionUntilTheCacheShowsOurJobs: a reconcile whose cache does
// not show yet a Job the manager created decides nothing (it would place
// the Job again and create it again) and comes back; it decides once the
// cache shows the Job, or once the memory has run out (a Job gone before
// the cache ever showed it is created again).
func TestNoDecisionUntilTheCacheShowsOurJobs(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = api.AddToScheme(scheme)
	js := testobj.NewJobSet("ns", "train").ReplicatedJob("w", 1, 1).Obj()
	js.UID = "js-uid"
	creates := 0
	behind := false // the cache shows no Job, when set
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(js).WithStatusSubresource(js).
		WithIndex(&batchv1.Job{}, OwnerUIDIndex, ownerJobSetUID).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if _, ok := obj.(*batchv1.Job); ok {
					creates++
				}
				return c.Create(ctx, obj, opts...)
			},
			List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				if _, ok := list.(*batchv1.JobList); ok && behind {
					return nil
				}
				return c.List(ctx, list, opts...)
			},
		}).Build()
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC))
	r := &Reconciler{Client: c, Clock: clk, Parallelism: 1}
	decisions := 0
	r.decide = func(o policy.Observed) policy.Plan {
		decisions++
		return policy.Decide(o)
	}
	reconcile := func() ctrl.Result {
		t.Helper()
		res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(js)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	reconcile()
	if creates != 1 {
		t.Fatalf("first reconcile: %d creates, want 1", creates)
	}
	behind = true
	if res := reconcile(); decisions != 1 || creates != 1 || res.RequeueAfter == 0 {
		t.Fatalf("on a cache without the Job just created: %d decisions, %d creates, requeue after %s; want 1, 1, some", decisions, creates, res.RequeueAfter)
	}
	clk.Step(recentMemory)
	reconcile()
	if decisions != 2 || creates != 2 {
		t.Fatalf("after the memory ran out: %d decisions, %d creates; want 2, 2 (the cache had time: decide again)", decisions, creates)
	}
	behind = false
	if reconcile(); decisions != 3 || creates != 2 {
		t.Fatalf("once the cache shows the Job: %d decisions, %d creates; want 3, 2", decisions, creates)
	}
}

// TestNoDecisionOnAJobSetOlderThanOurWrite: a reconcile that reads the
// JobSet as it was before this manager's own last status write decides
// nothing (it would undo the write: create again the Jobs a release had
// deleted) and comes back; once the cache shows the write, it decides.
func TestNoDecisionOnAJobSetOlderThanOurWrite(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = api.AddToScheme(scheme)
	js := testobj.NewJobSet("ns", "train").ReplicatedJob("w", 1, 1).Obj()
	js.UID = "js-uid"
	var stale *api.JobSet // what a cache behind the manager shows, when set
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(js).WithStatusSubresource(js).
		WithIndex(&batchv1.Job{}, OwnerUIDIndex, func(client.Object) []string { return nil }).
		WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if got, ok := obj.(*api.JobSet); ok && stale != nil {
				stale.DeepCopyInto(got)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		}}).Build()
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC))
	r := &Reconciler{Client: c, Clock: clk, Parallelism: 1}
	decisions := 0
	r.decide = func(o policy.Observed) policy.Plan {
		decisions++
		status := *o.JobSet.Status.DeepCopy()
		status.Restarts++
		return policy.Plan{StatusChanged: true, Status: status}
	}
	reconcile := func() ctrl.Result {
		t.Helper()
		res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(js)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	var before api.JobSet
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(js), &before); err != nil {
		t.Fatal(err)
	}
	reconcile() // writes its status
	stale = &before
	if res := reconcile(); decisions != 1 || res.RequeueAfter == 0 {
		t.Fatalf("on the JobSet from before the write: %d decisions (want 1), requeue after %s (want some)", decisions, res.RequeueAfter)
	}
	stale = nil
	reconcile()
	if decisions != 2 {
		t.Fatalf("once the cache shows the write: %d decisions, want 2", decisions)
	}
	// A version the manager did not replace is decided on, stale or not.
	other := before.DeepCopy()
	other.ResourceVersion = "not-ours"
	stale = other
	reconcile()
	if decisions != 3 {
		t.Fatalf("on a version the manager never replaced: %d decisions, want 3", decisions)
	}
}
