package testobj

import (
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

// JobBuilder builds a Job, by default with the labels a JobSet's child
// carries once OfJobSet names its JobSet (as Kueue's MakeJob().Obj()).
type JobBuilder struct{ j *batchv1.Job }

// NewJob starts a Job with no labels and an empty spec.
func NewJob(namespace, name string) *JobBuilder {
	return &JobBuilder{j: &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name,
		Labels: map[string]string{}, Annotations: map[string]string{}}}}
}

// OfJobSet labels the Job child index of replicated job rjob of jobSet.
func (b *JobBuilder) OfJobSet(jobSet, rjob string, index int) *JobBuilder {
	b.j.Labels[api.JobSetNameKey], b.j.Labels[api.ReplicatedJobNameKey] = jobSet, rjob
	b.j.Labels[api.JobIndexKey] = strconv.Itoa(index)
	return b
}

// Label sets one label.
func (b *JobBuilder) Label(k, v string) *JobBuilder { b.j.Labels[k] = v; return b }

// Attempt labels the JobSet restart attempt the Job belongs to.
func (b *JobBuilder) Attempt(n int) *JobBuilder { return b.Label(api.RestartsKey, strconv.Itoa(n)) }

// GlobalIndex labels the Job's index among all of its JobSet's Jobs.
func (b *JobBuilder) GlobalIndex(n int) *JobBuilder {
	return b.Label(api.JobGlobalIndexKey, strconv.Itoa(n))
}

// PinnedTo pins the Job to domain of key, as placement does.
func (b *JobBuilder) PinnedTo(key, domain string) *JobBuilder { api.Pin(b.j, key, domain); return b }

// Parallelism sets the Job's pods.
func (b *JobBuilder) Parallelism(n int32) *JobBuilder {
	b.j.Spec.Parallelism, b.j.Spec.Completions = ptr.To(n), ptr.To(n)
	return b
}

// Indexed makes the Job an Indexed Job of n pods, as a TPU slice's is.
func (b *JobBuilder) Indexed(n int32) *JobBuilder {
	b.j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	return b.Parallelism(n)
}

// BackoffLimit sets how many pod failures the Job tolerates.
func (b *JobBuilder) BackoffLimit(n int32) *JobBuilder { b.j.Spec.BackoffLimit = ptr.To(n); return b }

// PodSpec sets the pods' spec.
func (b *JobBuilder) PodSpec(spec corev1.PodSpec) *JobBuilder {
	b.j.Spec.Template.Spec = spec
	return b
}

// PodAnnotation sets one annotation of the pods.
func (b *JobBuilder) PodAnnotation(k, v string) *JobBuilder {
	if b.j.Spec.Template.Annotations == nil {
		b.j.Spec.Template.Annotations = map[string]string{}
	}
	b.j.Spec.Template.Annotations[k] = v
	return b
}

// Condition adds a True condition of typ at.
func (b *JobBuilder) Condition(typ batchv1.JobConditionType, reason, message string, at time.Time) *JobBuilder {
	b.j.Status.Conditions = append(b.j.Status.Conditions, batchv1.JobCondition{Type: typ, Status: corev1.ConditionTrue,
		Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(at)})
	return b
}

// Failed marks the Job failed at, with the Job controller's reason.
func (b *JobBuilder) Failed(reason, message string, at time.Time) *JobBuilder {
	return b.Condition(batchv1.JobFailed, reason, message, at)
}

// Deleting marks the Job as going (a deletion timestamp).
func (b *JobBuilder) Deleting(at time.Time) *JobBuilder {
	b.j.DeletionTimestamp = &metav1.Time{Time: at}
	return b
}

// Edit applies f to the Job.
func (b *JobBuilder) Edit(f func(*batchv1.Job)) *JobBuilder { f(b.j); return b }

// Obj is a copy of the Job built.
func (b *JobBuilder) Obj() *batchv1.Job { return b.j.DeepCopy() }

// PodBuilder builds a pod, by default of no Job, Pending, unscheduled.
type PodBuilder struct{ p *corev1.Pod }

// NewPod starts a pod.
func NewPod(namespace, name string) *PodBuilder {
	return &PodBuilder{p: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name,
		Labels: map[string]string{}, Annotations: map[string]string{}}, Status: corev1.PodStatus{Phase: corev1.PodPending}}}
}

// OfJob makes the pod completion index of Job job (the labels and the
// annotation the Job controller writes).
func (b *PodBuilder) OfJob(job string, index int) *PodBuilder {
	b.p.Labels[batchv1.JobNameLabel], b.p.Labels[api.LegacyJobNameLabel] = job, job
	b.p.Annotations[batchv1.JobCompletionIndexAnnotation] = strconv.Itoa(index)
	return b
}

// Label sets one label of the pod.
func (b *PodBuilder) Label(k, v string) *PodBuilder { b.p.Labels[k] = v; return b }

// Annotation sets one annotation of the pod.
func (b *PodBuilder) Annotation(k, v string) *PodBuilder { b.p.Annotations[k] = v; return b }

// Attempt labels the JobSet restart attempt the pod belongs to.
func (b *PodBuilder) Attempt(n int) *PodBuilder { return b.Label(api.RestartsKey, strconv.Itoa(n)) }

// On schedules the pod on node, in phase.
func (b *PodBuilder) On(node string, phase corev1.PodPhase) *PodBuilder {
	b.p.Spec.NodeName, b.p.Status.Phase = node, phase
	return b
}

// Containers gives the pod containers of these names.
func (b *PodBuilder) Containers(names ...string) *PodBuilder {
	for _, n := range names {
		b.p.Spec.Containers = append(b.p.Spec.Containers, corev1.Container{Name: n})
	}
	return b
}

// Edit applies f to the pod.
func (b *PodBuilder) Edit(f func(*corev1.Pod)) *PodBuilder { f(b.p); return b }

// Obj is a copy of the pod built.
func (b *PodBuilder) Obj() *corev1.Pod { return b.p.DeepCopy() }
