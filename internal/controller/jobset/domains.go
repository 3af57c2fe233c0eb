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
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

// wakeWindow spaces a waiting JobSet's looks: the first wake in a window
// makes it look at once, the later ones once at the window's end, so a
// burst of changes (another JobSet's thousands of pods going) costs each
// waiting JobSet two looks, not one per change.
const wakeWindow = time.Second

// wakes remembers when each JobSet was last woken at once (memory only:
// a restarted manager wakes every JobSet anyway).
type wakes struct {
	mu    sync.Mutex
	first map[types.NamespacedName]time.Time
}

// delay is how long the wake of key at now waits: 0 opens a window, else
// the rest of the open one.
func (w *wakes) delay(key types.NamespacedName, now time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t, ok := w.first[key]; ok && now.Sub(t) < wakeWindow {
		return wakeWindow - now.Sub(t)
	}
	for k, t := range w.first { // a new window: forget the closed ones
		if now.Sub(t) >= wakeWindow {
			delete(w.first, k)
		}
	}
	if w.first == nil {
		w.first = map[types.NamespacedName]time.Time{}
	}
	w.first[key] = now
	return 0
}

// handler enqueues each woken JobSet after its delay; the queue keeps one
// pending add per JobSet.
func (w *wakes) handler() handler.EventHandler {
	return handler.Funcs{GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		key := client.ObjectKeyFromObject(e.Object)
		q.AddAfter(reconcile.Request{NamespacedName: key}, w.delay(key, time.Now()))
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
		{&corev1.Node{}, func(o any) { d.SetNode(o.(*corev1.Node)) }, func(_, name string) { d.DeleteNode(name) }, "nodes"},
		{&batchv1.Job{}, func(o any) { d.SetJob(o.(*batchv1.Job)) }, d.DeleteJob, "jobs"},
		{&corev1.Pod{}, func(o any) { d.SetPod(o.(*corev1.Pod)) }, d.DeletePod, "pods"},
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

// observePlacement reads what placing js by key needs: key's domains from
// the domain cache, its pins and its priority.
func (r *Reconciler) observePlacement(ctx context.Context, js *api.JobSet, key string) (*Placement, error) {
	if r.domainsSynced != nil && !r.domainsSynced() {
		return nil, errDomainsNotSynced
	}
	prio, err := priority(ctx, r.Client, js)
	if err != nil {
		return nil, err
	}
	snap, pins := r.Domains.Snapshot(key, js.Namespace+"/"+js.Name, js.UID)
	return &Placement{Key: key, Snapshot: snap, Pins: pins, Priority: prio, GroupLabel: r.GroupLabel, SizeLabel: r.SizeLabel}, nil
}

// remember applies what the plan says placement's memory must change.
func (r *Reconciler) remember(js *api.JobSet, p *Plan) {
	if r.Domains == nil {
		return
	}
	name := js.Namespace + "/" + js.Name
	switch {
	case p.ReleaseDomains:
		r.Domains.Release(name)
	case p.HoldDomains != nil:
		r.Domains.Hold(name, p.HoldDomains)
	case p.WaitForDomains != nil:
		r.Domains.Wait(*p.WaitForDomains)
	}
}
