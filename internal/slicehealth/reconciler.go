// Package slicehealth treats a slice (a node pool, or the partitions of a
// dynamic Slice) as one unit: one host
// that is NotReady past a short grace, gone, cordoned for repair, or under
// maintenance makes the whole slice unhealthy (gke.SliceProblem). The
// Reconciler fails the child Job running there at once, so its JobSet
// restarts every slice on healthy ones, instead of waiting out the 300 s
// eviction timeout.
package slicehealth

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	slicev1beta1 "github.com/multislice/multislice/api/accelerator/v1beta1"
	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/metrics"
	"github.com/multislice/multislice/internal/objcache"
	"github.com/multislice/multislice/internal/slicing"
)

// Reason is the reason of the Failed condition slice health writes on a
// child Job whose slice went bad.
const Reason = api.SliceUnhealthyReason

// domainIndex indexes child Jobs by the domain placement pinned them to,
// "<exclusive key>=<value>", the node label that selects the slice's hosts.
const domainIndex = "slicehealth.multislice.dev/domain"

// poolIndex indexes Nodes by their node pool, the domain of GKE's
// exclusive placement: a slice's nodes are read by it, not by a label
// selector over every node (a cached node's labels are a map only when
// asked for, nodelabels).
const poolIndex = "slicehealth.multislice.dev/pool"

// Reconciler checks the slice of a running child Job that placement pinned
// to a domain whenever the Job is pinned or one of the slice's Nodes
// changes (a Node event finds its Jobs through the domain index), and fails
// the Job when the slice is unhealthy. A host NotReady within its grace is
// looked at again when the grace runs out.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Grace is how long a host may be NotReady before its slice counts as
	// failed: a node pool's. A Job on a dynamic Slice fails as soon as the
	// slice controller judges its Slice FAILED (as GKE's does: the cube is
	// the unit of failure, and the Slice is formed again without it).
	Grace time.Duration
	// Slices: dynamic slicing is on, Slices are watched.
	Slices bool
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// SetupWithManager registers the index and the controller (leader only).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Now == nil {
		r.Now = time.Now
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &batchv1.Job{}, domainIndex, func(o client.Object) []string {
		return domainsOf(o.(*batchv1.Job))
	}); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Node{}, poolIndex, func(o client.Object) []string {
		if v := objcache.NodeLabel(o, gke.NodePoolLabel); v != "" {
			return []string{v}
		}
		return nil
	}); err != nil {
		return err
	}
	// A Job matters when it is pinned, or its pinning changes; its status
	// updates (every pod's progress) do not change its slice's health.
	pinned := predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return len(domainsOf(e.Object.(*batchv1.Job))) > 0 },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !slices.Equal(domainsOf(e.ObjectNew.(*batchv1.Job)), domainsOf(e.ObjectOld.(*batchv1.Job)))
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	b := ctrl.NewControllerManagedBy(mgr).Named("slicehealth").
		For(&batchv1.Job{}, builder.WithPredicates(pinned)).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.jobsOnNode), builder.WithPredicates(healthChanged))
	if r.Slices {
		b = b.Watches(&slicev1beta1.Slice{}, handler.EnqueueRequestsFromMapFunc(r.jobsOnSlice))
	}
	return b.Complete(r)
}

// domainsOf are the index values of a pinned child Job: its domain, or
// its Slice's partitions; nil if it is not pinned.
func domainsOf(j *batchv1.Job) []string {
	if j.Labels[api.JobSetNameKey] == "" {
		return nil
	}
	if parts := slicing.PinnedPartitions(j); len(parts) > 0 {
		out := make([]string, 0, len(parts)+1)
		for _, p := range parts {
			out = append(out, gke.PartitionCubeLabel+"="+p)
		}
		// No node has this label: only a Slice's events look it up.
		return append(out, slicing.SliceAnnotation+"="+slicing.PinnedSlice(j))
	}
	domain, key := api.PinnedDomain(j), j.Annotations[api.ExclusiveKey]
	if domain == "" || key == "" {
		return nil
	}
	return []string{key + "=" + domain}
}

// sliceOf is the selector of a pinned Job's hosts, how many it has when
// whole (0: as its nodes' labels say) and how a message names the slice.
func sliceOf(j *batchv1.Job) (sel labels.Selector, hosts int, where string) {
	if parts := slicing.PinnedPartitions(j); len(parts) > 0 {
		return slicing.PinnedSelector(j), int(ptr.Deref(j.Spec.Parallelism, 1)),
			fmt.Sprintf("Slice %s (partitions %s)", slicing.PinnedSlice(j), strings.Join(parts, ", "))
	}
	domain, key := api.PinnedDomain(j), j.Annotations[api.ExclusiveKey]
	return labels.SelectorFromSet(labels.Set{key: domain}), 0, key + "=" + domain
}

// listNodes is how the nodes sel selects are listed: by the pool index
// when sel names a pool, the common case, else by sel over every node.
func listNodes(sel labels.Selector) client.ListOption {
	if sel != nil {
		if reqs, _ := sel.Requirements(); len(reqs) == 1 && reqs[0].Key() == gke.NodePoolLabel && reqs[0].Operator() == selection.Equals {
			return client.MatchingFields{poolIndex: reqs[0].Values().UnsortedList()[0]}
		}
	}
	return client.MatchingLabelsSelector{Selector: sel}
}

// healthChanged passes Node events that can change a slice's health: a
// node added or deleted, or a change of readiness, taints, cordon, labels
// or deletion; not the heartbeats of every node.
var healthChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		a, b := objcache.NodeOf(e.ObjectOld), objcache.NodeOf(e.ObjectNew)
		if a == nil || b == nil {
			return true
		}
		return gke.NodeReady(a) != gke.NodeReady(b) || gke.HostProblem(a) != gke.HostProblem(b) ||
			!maps.Equal(a.Labels, b.Labels)
	},
}

// jobsOnNode maps a Node to the pinned Jobs whose domain it is in: one
// index lookup per label of the node.
func (r *Reconciler) jobsOnNode(ctx context.Context, o client.Object) []reconcile.Request {
	var out []reconcile.Request
	for k, v := range o.GetLabels() {
		var jobs batchv1.JobList
		if err := r.Client.List(ctx, &jobs, client.MatchingFields{domainIndex: k + "=" + v}, client.UnsafeDisableDeepCopy); err != nil {
			continue
		}
		for i := range jobs.Items {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: jobs.Items[i].Namespace, Name: jobs.Items[i].Name}})
		}
	}
	return out
}

// jobsOnSlice maps a Slice to the Jobs pinned to it.
func (r *Reconciler) jobsOnSlice(ctx context.Context, o client.Object) []reconcile.Request {
	var jobs batchv1.JobList
	if err := r.Client.List(ctx, &jobs, client.MatchingFields{domainIndex: slicing.SliceAnnotation + "=" + o.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	out := make([]reconcile.Request, len(jobs.Items))
	for i := range jobs.Items {
		out[i] = reconcile.Request{NamespacedName: types.NamespacedName{Namespace: jobs.Items[i].Namespace, Name: jobs.Items[i].Name}}
	}
	return out
}

// sliceFailed is why the Slice a Job is pinned to failed ("" when it did
// not, or the Job is on a node pool).
func (r *Reconciler) sliceFailed(ctx context.Context, j *batchv1.Job) (string, error) {
	name := slicing.PinnedSlice(j)
	if !r.Slices || name == "" {
		return "", nil
	}
	var s slicev1beta1.Slice
	if err := r.Client.Get(ctx, types.NamespacedName{Name: name}, &s); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	if _, failed, why := slicing.StateOf(&s); failed {
		return "its Slice failed: " + why, nil
	}
	return "", nil
}

// Reconcile looks at one Job's slice.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var j batchv1.Job
	if err := r.Client.Get(ctx, req.NamespacedName, &j); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if len(domainsOf(&j)) == 0 || j.DeletionTimestamp != nil || ptr.Deref(j.Spec.Suspend, false) || api.JobOutcome(&j) != "" {
		return reconcile.Result{}, nil
	}
	sel, hosts, where := sliceOf(&j)
	var nodes corev1.NodeList
	if err := r.Client.List(ctx, &nodes, listNodes(sel)); err != nil {
		return reconcile.Result{}, err
	}
	if hosts == 0 {
		hosts = expectedHosts(nodes.Items, &j)
	}
	now := r.Now()
	cause, err := r.sliceFailed(ctx, &j)
	if err != nil {
		return reconcile.Result{}, err
	}
	if cause == "" {
		cause = gke.SliceProblem(nodes.Items, hosts, r.Grace, now)
	}
	if cause == "" {
		return reconcile.Result{RequeueAfter: gke.GraceLeft(nodes.Items, r.Grace, now)}, nil
	}
	msg := fmt.Sprintf("slice %s on %s is unhealthy: %s", j.Name, where, cause)
	// The event first: it is stamped with the time the fault was seen,
	// before the restart it causes (a JobSet's timeline reads in order).
	if r.Recorder != nil {
		js := &api.JobSet{ObjectMeta: metav1.ObjectMeta{Name: j.Labels[api.JobSetNameKey], Namespace: j.Namespace,
			UID: types.UID(j.Labels[api.JobSetUIDKey])}}
		js.SetGroupVersionKind(api.GroupVersion.WithKind("JobSet"))
		r.Recorder.Eventf(js, &j, corev1.EventTypeWarning, Reason, "FailSlice", "%s", msg)
	}
	if err := r.fail(ctx, &j, msg, now); err != nil {
		return reconcile.Result{}, fmt.Errorf("fail job %s: %w", j.Name, err)
	}
	if err := r.releaseStrandedPods(ctx, &j, nodes.Items); err != nil {
		return reconcile.Result{}, fmt.Errorf("release pods of job %s: %w", j.Name, err)
	}
	metrics.ObserveSliceFailure(j.Namespace, cause)
	return reconcile.Result{}, nil
}
