package slice

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	slicev1beta1 "github.com/multislice/multislice/api/accelerator/v1beta1"
	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/objcache"
)

// Indexes of the manager's cache: Slices by partition id, Nodes by the
// partition they belong to.
const (
	partitionIndex     = "slice.spec.partitionIds"
	nodePartitionIndex = "node.partition"
)

// Reconciler keeps each Slice's Ready condition true to its hosts.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	Clock    clock.Clock
}

// SetupWithManager registers the controller and its indexes: a node's
// change looks again at the Slices of its partition.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(context.Background(), &slicev1beta1.Slice{}, partitionIndex, func(o client.Object) []string {
		return o.(*slicev1beta1.Slice).Spec.PartitionIDs
	}); err != nil {
		return err
	}
	if err := idx.IndexField(context.Background(), &corev1.Node{}, nodePartitionIndex, func(o client.Object) []string {
		if v := objcache.NodeLabel(o, gke.PartitionCubeLabel); v != "" {
			return []string{v}
		}
		return nil
	}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).Named("slice").
		For(&slicev1beta1.Slice{}).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.slicesOfNode)).
		Complete(r)
}

func (r *Reconciler) slicesOfNode(ctx context.Context, o client.Object) []reconcile.Request {
	id := objcache.NodeLabel(o, gke.PartitionCubeLabel)
	if id == "" {
		return nil
	}
	var list slicev1beta1.SliceList
	if err := r.Client.List(ctx, &list, client.MatchingFields{partitionIndex: id}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, len(list.Items))
	for i := range list.Items {
		out[i] = reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}}
	}
	return out
}

// Reconcile judges one Slice, or lets it go if its JobSet is gone.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var s slicev1beta1.Slice
	if err := r.Client.Get(ctx, req.NamespacedName, &s); err != nil || s.DeletionTimestamp != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if orphan, err := r.orphaned(ctx, &s); err != nil || orphan {
		if orphan {
			err = client.IgnoreNotFound(r.Client.Delete(ctx, &s))
		}
		return ctrl.Result{}, err
	}
	hosts := map[string][]corev1.Node{}
	var earlier []string
	for _, id := range s.Spec.PartitionIDs {
		var nodes corev1.NodeList
		if err := r.Client.List(ctx, &nodes, client.MatchingFields{nodePartitionIndex: id}); err != nil {
			return ctrl.Result{}, err
		}
		hosts[id] = HostsOf(&s, nodes.Items)
		var sharing slicev1beta1.SliceList
		if err := r.Client.List(ctx, &sharing, client.MatchingFields{partitionIndex: id}); err != nil {
			return ctrl.Result{}, err
		}
		for i := range sharing.Items {
			if o := &sharing.Items[i]; o.Name != s.Name && o.DeletionTimestamp == nil && before(o, &s) && Overlap(o, &s) {
				earlier = append(earlier, o.Name)
			}
		}
	}
	cond := Readiness(&s, hosts, earlier)
	old := meta.FindStatusCondition(s.Status.Conditions, cond.Type)
	if old != nil && old.Status == cond.Status && old.Reason == cond.Reason && old.Message == cond.Message {
		return ctrl.Result{}, nil
	}
	cond.LastTransitionTime = metav1.NewTime(r.Clock.Now())
	cond.ObservedGeneration = s.Generation
	meta.SetStatusCondition(&s.Status.Conditions, cond)
	if err := r.Client.Status().Update(ctx, &s); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.Recorder != nil && cond.Status == metav1.ConditionFalse && (old == nil || old.Status == metav1.ConditionTrue) {
		r.Recorder.Eventf(&s, nil, corev1.EventTypeWarning, cond.Reason, "Judging", "%s", cond.Message)
	}
	return ctrl.Result{}, nil
}

// before: a was created first (by name when at the same second).
func before(a, b *slicev1beta1.Slice) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// orphaned: the Slice was formed for a JobSet that is gone (or was
// recreated under its name). Slices made by hand have no such labels.
func (r *Reconciler) orphaned(ctx context.Context, s *slicev1beta1.Slice) (bool, error) {
	l := s.Labels
	ns, name, uid := l[slicev1beta1.JobSetNamespaceLabel], l[slicev1beta1.JobSetNameLabel], l[slicev1beta1.JobSetUIDLabel]
	if ns == "" || name == "" || uid == "" {
		return false, nil
	}
	var js api.JobSet
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &js)
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("the slice's JobSet %s/%s: %w", ns, name, err)
	}
	return string(js.UID) != uid, nil
}
