package jobset

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

// workloadList is Kueue's, read unstructured: the manager does not
// depend on Kueue's Go module, and a cluster without Kueue has no kind.
var workloadList = schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: "WorkloadList"}

// HotSwapEvictionReason is the reason of the Evicted condition the
// manager writes on a hot-swap victim's Workload: Kueue's own for a
// preemption, the one reason its job reconciler requeues at once (any
// other leaves the Workload evicted and not requeued, Requeued=False).
// The message says it was a hot-swap.
const HotSwapEvictionReason = "Preempted"

// evictFromKueue evicts js's Workload the way Kueue's own evictions look
// (condition Evicted=True): Kueue's job reconciler then suspends the
// JobSet, releases its quota once its pods are gone, and requeues it. A
// Workload already evicted, or none (Kueue not installed, not created
// yet), is left alone.
func (r *Reconciler) evictFromKueue(ctx context.Context, js *api.JobSet, msg string) error {
	var list unstructured.UnstructuredList
	list.SetGroupVersionKind(workloadList)
	if err := r.Client.List(ctx, &list, client.InNamespace(js.Namespace)); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("hot-swap: list Kueue Workloads: %w", err)
	}
	for i := range list.Items {
		w := &list.Items[i]
		if !ownedBy(w, js) {
			continue
		}
		conds, _, _ := unstructured.NestedSlice(w.Object, "status", "conditions")
		out := make([]any, 0, len(conds)+1)
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Evicted" {
				if m["status"] == "True" {
					return nil // Kueue evicts it already
				}
				continue
			}
			out = append(out, c)
		}
		out = append(out, map[string]any{"type": "Evicted", "status": "True", "reason": HotSwapEvictionReason,
			"message": msg, "lastTransitionTime": r.Clock.Now().UTC().Format("2006-01-02T15:04:05Z"), "observedGeneration": w.GetGeneration()})
		if err := unstructured.SetNestedSlice(w.Object, out, "status", "conditions"); err != nil {
			return err
		}
		if err := r.Client.Status().Update(ctx, w); err != nil {
			return fmt.Errorf("hot-swap: evict Workload %s: %w", w.GetName(), err)
		}
	}
	return nil
}

func ownedBy(o client.Object, js *api.JobSet) bool {
	for _, ref := range o.GetOwnerReferences() {
		if ref.UID == js.UID {
			return true
		}
	}
	return false
}
