package jobset

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/controller/jobset/policy"
	"github.com/multislice/multislice/internal/objcache"
)

// wakeQuiet and wakeMaxWait shape a waiting JobSet's looks: it looks once
// the wakes pause for wakeQuiet, and at least every wakeMaxWait while they
// do not. The end of a small change (another JobSet's eight pods going) is
// seen wakeQuiet after it; a burst (its thousands of pods going) costs a
// look a second, not one per change.
const (
	wakeQuiet   = 100 * time.Millisecond
	wakeMaxWait = time.Second
)

// pendingWake is a JobSet's wakes not acted on yet: the first and the last.
type pendingWake struct{ first, last time.Time }

// due says whether a pending wake is acted on at now, else how long until.
func due(p pendingWake, now time.Time) (bool, time.Duration) {
	at := p.last.Add(wakeQuiet)
	if maxAt := p.first.Add(wakeMaxWait); maxAt.Before(at) {
		at = maxAt
	}
	if !now.Before(at) {
		return true, 0
	}
	return false, at.Sub(now)
}

// wakes holds the pending wakes (memory only: a restarted manager looks
// at every JobSet anyway).
type wakes struct {
	clock   clock.WithDelayedExecution
	mu      sync.Mutex
	pending map[types.NamespacedName]*pendingWake
}

// wake records a wake of key; look runs once it is due.
func (w *wakes) wake(key types.NamespacedName, look func()) {
	now := w.clock.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if p, ok := w.pending[key]; ok {
		p.last = now // its timer is running
		return
	}
	if w.pending == nil {
		w.pending = map[types.NamespacedName]*pendingWake{}
	}
	w.pending[key] = &pendingWake{first: now, last: now}
	w.clock.AfterFunc(wakeQuiet, func() { w.check(key, look) })
}

// check acts on key's pending wake if it is due, else checks again then.
func (w *wakes) check(key types.NamespacedName, look func()) {
	w.mu.Lock()
	ok, wait := due(*w.pending[key], w.clock.Now())
	if ok {
		delete(w.pending, key)
	}
	w.mu.Unlock()
	if !ok {
		w.clock.AfterFunc(wait, func() { w.check(key, look) })
		return
	}
	look()
}

// handler enqueues each woken JobSet when its wake is due.
func (w *wakes) handler() handler.EventHandler {
	return handler.Funcs{GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.Object)}
		w.wake(req.NamespacedName, func() { q.Add(req) })
	}}
}

// feedDomains keeps r.Domains current from the manager's informers of
// Nodes, child Jobs and pods, and makes a domain that frees up wake the
// JobSets waiting for one.
func (r *Reconciler) feedDomains(mgr ctrl.Manager) (<-chan event.GenericEvent, error) {
	wake := make(chan event.GenericEvent, 1024)
	r.Domains.Wake = func(jobSet string) {
		ns, name, _ := strings.Cut(jobSet, "/")
		select {
		case wake <- event.GenericEvent{Object: &api.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}}:
		default: // full: the waiting JobSet's periodic look still comes
		}
	}
	d := r.Domains
	feeds := []struct {
		obj         client.Object
		set         func(any)
		del         func(namespace, name string)
		description string
	}{
		{&corev1.Node{}, func(o any) { d.SetNode(objcache.NodeOf(o)) }, func(_, name string) { d.DeleteNode(name) }, "nodes"},
		{&batchv1.Job{}, func(o any) { d.SetJob(o.(*batchv1.Job)) }, d.DeleteJob, "jobs"},
		{&corev1.Pod{}, func(o any) { d.SetPod(objcache.PodOf(o)) }, d.DeletePod, "pods"},
	}
	var synced []func() bool
	for _, f := range feeds {
		inf, err := mgr.GetCache().GetInformer(context.Background(), f.obj)
		if err != nil {
			return nil, fmt.Errorf("domain cache: informer of %s: %w", f.description, err)
		}
		set, del := f.set, f.del
		reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    set,
			UpdateFunc: func(_, o any) { set(o) },
			DeleteFunc: func(o any) {
				if tomb, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
					o = tomb.Obj
				}
				if m, ok := o.(metav1.Object); ok {
					del(m.GetNamespace(), m.GetName())
				}
			},
		})
		if err != nil {
			return nil, fmt.Errorf("domain cache: watch %s: %w", f.description, err)
		}
		synced = append(synced, reg.HasSynced)
	}
	r.domainsSynced = func() bool {
		for _, s := range synced {
			if !s() {
				return false
			}
		}
		return true
	}
	return wake, nil
}

// errDomainsNotSynced: a decision before the domain cache has seen every
// node, Job and pod could give away a held domain.
var errDomainsNotSynced = fmt.Errorf("the domain cache has not seen the whole cluster yet")

// remember applies what the plan says placement's memory must change.
func (r *Reconciler) remember(js *api.JobSet, p *policy.Plan) {
	if r.Domains == nil {
		return
	}
	name := js.Namespace + "/" + js.Name
	switch {
	case p.ReleaseDomains:
		r.Domains.Release(name)
	case p.HoldDomains != nil:
		r.Domains.Hold(name, placedAttempt(p), p.HoldDomains)
	case p.WaitForDomains != nil:
		r.Domains.Wait(*p.WaitForDomains)
	}
}

// placedAttempt is the restart attempt of the Jobs a plan places: their
// reservations last until the Jobs of that attempt exist.
func placedAttempt(p *policy.Plan) string {
	for _, jobs := range [][]*batchv1.Job{p.Create, p.Resume, p.Pending} {
		if len(jobs) > 0 {
			return jobs[0].Labels[api.RestartsKey]
		}
	}
	return ""
}
