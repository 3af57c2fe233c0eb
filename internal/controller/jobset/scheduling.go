package jobset

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/podgroups"
)

// SchedulingInvalidReason is ChildJobsCreated's reason while a JobSet's
// spec.scheduling cannot be compiled (admission refuses it; a JobSet
// created while the webhook was off may have it).
const SchedulingInvalidReason = "InvalidScheduling"

// SchedulingObjects is what exists of a JobSet's Workload-Aware Scheduling
// objects (gate JobSetWorkloadAwareSchedulingAPI, spec.scheduling set).
type SchedulingObjects struct {
	// Workload: the JobSet's Workload exists.
	Workload bool
	// PodGroups are the names of the PodGroups the JobSet controls.
	PodGroups map[string]bool
	// Going: some are being deleted (a PodGroup waits for its pods to
	// go, kube-controller-manager's PodGroup protection).
	Going bool
}

// schedule fits the plan to spec.scheduling (KEP-969): a running JobSet
// has its Workload and every PodGroup before its Jobs are created, and
// each new Job's pods join their group; a suspended one holds none (they
// would reserve capacity), and gets them again when it resumes. A restart
// keeps them: the next attempt's pods join the same groups.
func schedule(o Observed, p *Plan, e *statusEditor, suspended bool) {
	js, have := o.JobSet, o.Scheduling
	plan, errs := podgroups.Compile(js)
	if len(errs) > 0 {
		p.Create, p.Resume = nil, nil
		e.put(ChildJobsCreated, metav1.ConditionFalse, SchedulingInvalidReason,
			"spec.scheduling: "+errs.ToAggregate().Error()+"; fix it (the webhook refuses such a JobSet) or remove spec.scheduling", corev1.EventTypeWarning)
		return
	}
	// Every new Job's pods join their group, a suspended JobSet's too: a
	// Job's pod template cannot take a group later, when it resumes.
	for _, j := range append(append([]*batchv1.Job(nil), p.Create...), p.Pending...) {
		joinGroup(plan, j) // built fresh by Decide: ours to change
	}
	if suspended {
		// What exists goes, by the names it has (spec.scheduling may have
		// changed since it was made).
		if have.Workload {
			p.DeleteWorkload = plan.Workload
		}
		for name := range have.PodGroups {
			p.DeletePodGroups = append(p.DeletePodGroups, name)
		}
		sort.Strings(p.DeletePodGroups)
		return
	}
	if have.Going {
		// A resumed JobSet's groups of before are still going: their
		// names are taken until they have gone (their delete event
		// requeues the JobSet), and the Jobs wait for the new ones.
		p.Create, p.Resume = nil, nil
		return
	}
	if !have.Workload {
		p.Workload = plan.WorkloadObject(js)
	}
	for _, g := range plan.Groups {
		if !have.PodGroups[g.Name] {
			p.PodGroups = append(p.PodGroups, plan.PodGroupObject(js, g))
		}
	}
}

// joinGroup points a new child Job's pods at their PodGroup.
func joinGroup(plan podgroups.Plan, j *batchv1.Job) {
	index, _ := strconv.Atoi(j.Labels[api.JobIndexKey])
	g := plan.ForJob(j.Labels[api.ReplicatedJobNameKey], index)
	if g == nil {
		return
	}
	j.Annotations = merge(j.Annotations, map[string]string{podgroups.TemplateAnnotation: g.Template})
	j.Spec.Template.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(g.Name)}
}

// observeScheduling reads which of the JobSet's scheduling objects exist
// (the cache holds those JobSets own).
func (r *Reconciler) observeScheduling(ctx context.Context, js *api.JobSet) (*SchedulingObjects, error) {
	have := &SchedulingObjects{PodGroups: map[string]bool{}}
	var w schedulingv1beta1.Workload
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: js.Namespace, Name: podgroups.WorkloadName(js)}, &w)
	switch {
	case err == nil:
		have.Going = w.DeletionTimestamp != nil
		have.Workload = metav1.IsControlledBy(&w, js) && !have.Going
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("read the Workload: %w", err)
	}
	var groups schedulingv1beta1.PodGroupList
	if err := r.Client.List(ctx, &groups, client.InNamespace(js.Namespace), client.MatchingLabels{api.JobSetUIDKey: string(js.UID)}); err != nil {
		return nil, fmt.Errorf("list the PodGroups: %w", err)
	}
	for i := range groups.Items {
		switch g := &groups.Items[i]; {
		case g.DeletionTimestamp != nil:
			have.Going = true
		case metav1.IsControlledBy(g, js):
			have.PodGroups[g.Name] = true
		}
	}
	return have, nil
}

// actScheduling creates the Workload and the PodGroups the plan lacks, or
// deletes those of a suspended JobSet. An object of one of the JobSet's
// names that already exists is either its own, not yet in the cache (the
// next reconcile sees it), or another's, never taken over: the error names
// it until one of them is renamed.
func (r *Reconciler) actScheduling(ctx context.Context, js *api.JobSet, p *Plan) error {
	if p.DeleteWorkload != "" || len(p.DeletePodGroups) > 0 {
		var errs []error
		for _, name := range p.DeletePodGroups {
			pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: js.Namespace, Name: name}}
			errs = append(errs, client.IgnoreNotFound(r.Client.Delete(ctx, pg)))
		}
		if p.DeleteWorkload != "" {
			w := &schedulingv1beta1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: js.Namespace, Name: p.DeleteWorkload}}
			errs = append(errs, client.IgnoreNotFound(r.Client.Delete(ctx, w)))
		}
		return errors.Join(errs...)
	}
	if p.Workload != nil {
		if err := r.Client.Create(ctx, p.Workload); apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("Workload %s already exists; if this JobSet does not control it, rename one of them", p.Workload.Name)
		} else if err != nil {
			return fmt.Errorf("create Workload %s: %w", p.Workload.Name, err)
		}
	}
	errs := make([]error, len(p.PodGroups))
	workqueue.ParallelizeUntil(ctx, r.Parallelism, len(p.PodGroups), func(i int) {
		pg := p.PodGroups[i]
		if err := r.Client.Create(ctx, pg); apierrors.IsAlreadyExists(err) {
			errs[i] = fmt.Errorf("PodGroup %s already exists; if this JobSet does not control it, rename one of them", pg.Name)
		} else if err != nil {
			errs[i] = fmt.Errorf("create PodGroup %s: %w", pg.Name, err)
		}
	})
	return errors.Join(errs...)
}
