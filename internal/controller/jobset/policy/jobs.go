package policy

import (
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/features"
	"github.com/multislice/multislice/internal/naming"
	"github.com/multislice/multislice/internal/podtemplate"
)

// resumed returns a copy of j unsuspended, its pod template's scheduling
// directives (nodeSelector, tolerations, scheduling gates) and the labels
// and annotations the JobSet writes rebuilt from the JobSet's template, as
// a new Job of the same identity would have them. A merge kept what Kueue
// injected for a flavor the workload was since evicted from, so its pods
// asked for both flavors' nodes and never scheduled (upstream #1294).
// Placement pins the Job to its domain again on top. The execution attempt
// it resumes in is set in the same update, so no pod starts with a stale one.
// With the MutablePodResourcesForSuspendedJobSets gate, the containers' and
// the pod's resources are rebuilt too (KEP-1150: Kueue right-sized them).
func resumed(js *api.JobSet, j *batchv1.Job, id jobIdentity, gates features.Gates, execution *int32) *batchv1.Job {
	out := j.DeepCopy()
	out.Spec.Suspend = ptr.To(false)
	if execution != nil {
		a := map[string]string{api.ExecutionAttemptKey: strconv.Itoa(int(*execution))}
		out.Labels, out.Annotations = merge(out.Labels, a), merge(out.Annotations, a)
	}
	fresh := constructJob(js, id, gates.RestartJob, execution).Spec.Template
	to := &out.Spec.Template
	to.Labels = merge(jobControllerLabels(j), fresh.Labels)
	to.Annotations = fresh.Annotations
	to.Spec.NodeSelector = fresh.Spec.NodeSelector
	to.Spec.Tolerations = fresh.Spec.Tolerations
	to.Spec.SchedulingGates = fresh.Spec.SchedulingGates
	if gates.MutablePodResources {
		podtemplate.CopyResources(&to.Spec, &fresh.Spec)
	}
	return out
}

// jobControllerLabels are the pod-template labels the Job API wrote (its
// selector's, job-name): kept, or the update would no longer match.
func jobControllerLabels(j *batchv1.Job) map[string]string {
	var selector map[string]string
	if j.Spec.Selector != nil {
		selector = j.Spec.Selector.MatchLabels
	}
	out := map[string]string{}
	for k, v := range j.Spec.Template.Labels {
		_, selected := selector[k]
		if selected || k == batchv1.JobNameLabel || k == batchv1.ControllerUidLabel || k == api.LegacyJobNameLabel || k == api.LegacyControllerUIDLabel {
			out[k] = v
		}
	}
	return out
}

// jobsStage decides the Jobs of the current attempt to create: those of a
// startable replicated job that do not exist, or, while the previous
// attempt's Jobs go, that wait for them (Pending: BlockingRecreate, or a
// name still taken). Once every Job exists after a refusal,
// ChildJobsCreated says so again.
func jobsStage(d *decision) bool {
	js, c, p := d.js, d.c, &d.p
	d.startable = startable(js, p.Status.ReplicatedJobsStatus, d.e, d.suspended)
	blocked := len(c.previous) > 0 && js.Spec.FailurePolicy != nil &&
		js.Spec.FailurePolicy.RestartStrategy == api.BlockingRecreate
	previous := map[string]bool{}
	for _, j := range c.previous {
		previous[j.Name] = true
	}
	for _, id := range identities(js) {
		if !d.startable[id.rjob.Name] {
			continue
		}
		name := naming.JobName(js.Name, id.rjob.Name, id.index)
		_, exists := c.byName[name]
		switch {
		case !exists && !blocked:
			p.Create = append(p.Create, constructJob(js, id, d.o.Gates.RestartJob, p.Status.ExecutionAttempts))
		case !exists || previous[name]:
			p.Pending = append(p.Pending, constructJob(js, id, d.o.Gates.RestartJob, p.Status.ExecutionAttempts))
		}
	}
	if len(p.Create)+len(p.Pending) == 0 && d.o.JobsRefused == nil {
		createdAgain(d.e)
	}
	return false
}

// suspendStage suspends the Jobs of a suspended JobSet, which then holds
// no capacity (e.g. queued by Kueue: it is placed when it resumes), or
// resumes the suspended Jobs of one that runs.
func suspendStage(d *decision) bool {
	js, p, e := d.js, &d.p, d.e
	if d.suspended {
		for _, j := range d.c.active {
			if !ptr.Deref(j.Spec.Suspend, false) {
				p.Suspend = append(p.Suspend, j)
			}
		}
		e.set(api.JobSetSuspended, metav1.ConditionTrue, api.SuspendedReason, api.SuspendedMessage, corev1.EventTypeNormal)
		e.set(api.JobSetRestartingJobSet, metav1.ConditionFalse, api.JobSetSuspendedReason, "jobset is suspended", "")
		p.ReleaseDomains = true
		return false
	}
	byName := map[string]jobIdentity{}
	for _, id := range identities(js) {
		byName[naming.JobName(js.Name, id.rjob.Name, id.index)] = id
	}
	for _, j := range d.c.active {
		id, known := byName[j.Name]
		if known && ptr.Deref(j.Spec.Suspend, false) && d.startable[j.Labels[api.ReplicatedJobNameKey]] {
			p.Resume = append(p.Resume, resumed(js, j, id, d.o.Gates, p.Status.ExecutionAttempts))
		}
	}
	e.set(api.JobSetSuspended, metav1.ConditionFalse, api.ResumedReason, api.ResumedMessage, corev1.EventTypeNormal)
	if len(p.Resume) > 0 && d.o.Gates.WorkloadAwareScheduling {
		regroup(js, p)
	}
	return false
}
