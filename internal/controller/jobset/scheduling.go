package jobset

import (
	"context"
	"errors"
	"fmt"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/controller/jobset/policy"
	"github.com/multislice/multislice/internal/podgroups"
)

// observeScheduling reads which of the JobSet's scheduling objects exist
// (the cache holds those JobSets own).
func (r *Reconciler) observeScheduling(ctx context.Context, js *api.JobSet) (*policy.SchedulingObjects, error) {
	have := &policy.SchedulingObjects{PodGroups: map[string]bool{}, Going: map[string]bool{}}
	var w schedulingv1beta1.Workload
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: js.Namespace, Name: podgroups.WorkloadName(js)}, &w)
	switch {
	case err == nil:
		if w.DeletionTimestamp != nil {
			have.Going[w.Name] = true
		}
		have.Workload = metav1.IsControlledBy(&w, js) && w.DeletionTimestamp == nil
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("read the Workload: %w", err)
	}
	var groups schedulingv1beta1.PodGroupList
	if err := r.Client.List(ctx, &groups, client.InNamespace(js.Namespace), client.MatchingLabels{api.JobSetUIDKey: string(js.UID)},
		client.UnsafeDisableDeepCopy); err != nil { // the cache's own objects: only read
		return nil, fmt.Errorf("list the PodGroups: %w", err)
	}
	for i := range groups.Items {
		switch g := &groups.Items[i]; {
		case g.DeletionTimestamp != nil:
			have.Going[g.Name] = true
		case metav1.IsControlledBy(g, js):
			have.PodGroups[g.Name] = true
		}
	}
	return have, nil
}

// actScheduling deletes a suspended JobSet's Workload and PodGroups, or
// creates those the plan lacks.
func (r *Reconciler) actScheduling(ctx context.Context, js *api.JobSet, p *policy.Plan) error {
	gone := make([]*schedulingv1beta1.PodGroup, len(p.DeletePodGroups))
	for i, name := range p.DeletePodGroups {
		gone[i] = &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: js.Namespace, Name: name}}
	}
	err := parallel(ctx, r.Parallelism, "PodGroup", gone, func(pg *schedulingv1beta1.PodGroup) error {
		return client.IgnoreNotFound(r.Client.Delete(ctx, pg))
	})
	if p.DeleteWorkload != "" {
		w := &schedulingv1beta1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: js.Namespace, Name: p.DeleteWorkload}}
		err = errors.Join(err, client.IgnoreNotFound(r.Client.Delete(ctx, w)))
	}
	if err != nil {
		return err
	}
	if p.Workload != nil {
		if err := r.createOwn(ctx, p.Workload); err != nil {
			return fmt.Errorf("Workload %s: %w", p.Workload.Name, err)
		}
	}
	return parallel(ctx, r.Parallelism, "PodGroup", p.PodGroups, func(pg *schedulingv1beta1.PodGroup) error {
		return r.createOwn(ctx, pg)
	})
}

// createOwn creates one of the JobSet's objects. One of its name that
// exists already is either the JobSet's own, not yet in the cache (the
// next reconcile sees it), or another's, never taken over: the error says
// so until one of them is renamed.
func (r *Reconciler) createOwn(ctx context.Context, obj client.Object) error {
	err := r.Client.Create(ctx, obj)
	if apierrors.IsAlreadyExists(err) {
		return errors.New("already exists; if this JobSet does not control it, rename one of them")
	}
	return err
}
