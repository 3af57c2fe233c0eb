// Package testobj builds the API objects tests need (JobSets, child Jobs,
// pods, Nodes) in one call each, edited by options; unit, integration and
// end-to-end tests and benches share it, so an object's shape is written
// once.
package testobj

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

// JobSetBuilder builds a JobSet.
type JobSetBuilder struct{ js *api.JobSet }

// NewJobSet starts a JobSet with no replicated jobs.
func NewJobSet(namespace, name string) *JobSetBuilder {
	return &JobSetBuilder{js: &api.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}}
}

// ReplicatedJob adds an Indexed replicated job of replicas Jobs with
// parallelism = completions = pods.
func (b *JobSetBuilder) ReplicatedJob(name string, replicas, pods int32) *JobSetBuilder {
	b.js.Spec.ReplicatedJobs = append(b.js.Spec.ReplicatedJobs, api.ReplicatedJob{
		Name: name, Replicas: replicas,
		Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			Parallelism: ptr.To(pods), Completions: ptr.To(pods), BackoffLimit: ptr.To(int32(0)),
			CompletionMode: ptr.To(batchv1.IndexedCompletion),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "main", Image: "busybox"}},
			}},
		}},
	})
	return b
}

// Edit applies any change to the JobSet under construction.
func (b *JobSetBuilder) Edit(f func(*api.JobSet)) *JobSetBuilder { f(b.js); return b }

// LastReplicatedJob edits the replicated job added last.
func (b *JobSetBuilder) LastReplicatedJob(f func(*api.ReplicatedJob)) *JobSetBuilder {
	f(&b.js.Spec.ReplicatedJobs[len(b.js.Spec.ReplicatedJobs)-1])
	return b
}

// FailurePolicy sets maxRestarts and rules.
func (b *JobSetBuilder) FailurePolicy(maxRestarts int32, rules ...api.FailurePolicyRule) *JobSetBuilder {
	b.js.Spec.FailurePolicy = &api.FailurePolicy{MaxRestarts: maxRestarts, Rules: rules}
	return b
}

// Suspend sets spec.suspend.
func (b *JobSetBuilder) Suspend(s bool) *JobSetBuilder { b.js.Spec.Suspend = ptr.To(s); return b }

// Obj returns the JobSet.
func (b *JobSetBuilder) Obj() *api.JobSet { return b.js.DeepCopy() }
