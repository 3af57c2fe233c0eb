package policy

import (
	"slices"
	"sort"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/podgroups"
)

// SchedulingInvalidReason is ChildJobsCreated's reason while a JobSet's
// spec.scheduling cannot be compiled (admission refuses it; a JobSet
// created while the webhook was off may have it).
const SchedulingInvalidReason = "InvalidScheduling"

// PodGroupsGoingReason is ChildJobsCreated's reason while a resumed
// JobSet's Jobs wait for its PodGroups of before to be gone.
const PodGroupsGoingReason = "WaitingForPodGroupsToGo"

// SchedulingObjects is what exists of a JobSet's Workload-Aware Scheduling
// objects (gate JobSetWorkloadAwareSchedulingAPI, spec.scheduling set).
type SchedulingObjects struct {
	// Workload: the JobSet's Workload exists.
	Workload bool
	// PodGroups are the names of the PodGroups the JobSet controls.
	PodGroups map[string]bool
	// Going names those being deleted (a PodGroup waits for its pods to
	// go, kube-controller-manager's PodGroup protection): their names are
	// taken until they have gone.
	Going map[string]bool
}

// waitsFor: a name the plan needs is still going.
func (have *SchedulingObjects) waitsFor(plan podgroups.Plan) bool {
	if have.Going[plan.Workload] {
		return true
	}
	for _, g := range plan.Groups {
		if have.Going[g.Name] {
			return true
		}
	}
	return false
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
	for _, j := range slices.Concat(p.Create, p.Pending) {
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
	waiting := meta.FindStatusCondition(js.Status.Conditions, string(ChildJobsCreated))
	if have.waitsFor(plan) {
		// A resumed JobSet's groups of before are still going: their
		// names are taken until they have gone (their delete event
		// requeues the JobSet), and the Jobs wait for the new ones.
		if len(p.Create)+len(p.Resume) > 0 {
			e.put(ChildJobsCreated, metav1.ConditionFalse, PodGroupsGoingReason,
				"the Jobs wait for the PodGroups of before to go: kube-controller-manager's PodGroup protection removes a deleted PodGroup once no pod uses it (it needs its feature gate GenericWorkload)", corev1.EventTypeNormal)
		}
		p.Create, p.Resume = nil, nil
		return
	}
	if waiting != nil && waiting.Reason == PodGroupsGoingReason {
		e.set(ChildJobsCreated, metav1.ConditionTrue, "PodGroupsReady", "the PodGroups are made again; the child Jobs go on", corev1.EventTypeNormal)
	}
	if !have.Workload {
		p.Workload = plan.WorkloadObject(js)
	}
	planned := map[string]bool{}
	for _, g := range plan.Groups {
		planned[g.Name] = true
		if !have.PodGroups[g.Name] {
			p.PodGroups = append(p.PodGroups, plan.PodGroupObject(js, g))
		}
	}
	// A group whose Job is no more (fewer Jobs, ElasticJobSet) goes; it
	// is gone once its pods are.
	for name := range have.PodGroups {
		if !planned[name] {
			p.DeletePodGroups = append(p.DeletePodGroups, name)
		}
	}
	sort.Strings(p.DeletePodGroups)
}

// regroup: a suspended Job made before spec.scheduling changed (or was
// added or removed) points its pods at a group of before, and a Job's pod
// template cannot change its group; so on resume it goes instead (it has
// no pods) and is made again in its group of now.
func regroup(js *api.JobSet, p *Plan) {
	plan, errs := podgroups.Compile(js)
	if len(errs) > 0 {
		return // schedule refuses every Job
	}
	resume := p.Resume[:0:0]
	for _, j := range p.Resume {
		if inGroup(plan, j) {
			resume = append(resume, j)
		} else {
			p.Delete = append(p.Delete, j)
		}
	}
	p.Resume = resume
}

// inGroup: j's pods join the group the plan gives its Job, or none if it
// gives none. A group the controller did not give (no template
// annotation) is the user's, and counts as none.
func inGroup(plan podgroups.Plan, j *batchv1.Job) bool {
	want, have := "", ""
	if g := groupOf(plan, j); g != nil {
		want = g.Name
	}
	if g := j.Spec.Template.Spec.SchedulingGroup; g != nil && j.Annotations[podgroups.TemplateAnnotation] != "" {
		have = ptr.Deref(g.PodGroupName, "")
	}
	return have == want
}

// groupOf is the group the plan gives child Job j (nil: none).
func groupOf(plan podgroups.Plan, j *batchv1.Job) *podgroups.Group {
	index, _ := strconv.Atoi(j.Labels[api.JobIndexKey])
	return plan.ForJob(j.Labels[api.ReplicatedJobNameKey], index)
}

// joinGroup points a new child Job's pods at their PodGroup.
func joinGroup(plan podgroups.Plan, j *batchv1.Job) {
	g := groupOf(plan, j)
	if g == nil {
		return
	}
	j.Annotations = merge(j.Annotations, map[string]string{podgroups.TemplateAnnotation: g.Template})
	j.Spec.Template.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(g.Name)}
}

// schedulingStage keeps the Workload and PodGroups of spec.scheduling.
// It runs after suspendStage: the Jobs it groups are those the plan
// creates and resumes (commit 36f424e).
func schedulingStage(d *decision) bool {
	if d.o.Scheduling != nil {
		schedule(d.o, &d.p, d.e, d.suspended)
	}
	return false
}
