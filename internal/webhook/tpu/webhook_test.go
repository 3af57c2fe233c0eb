package tpu

import (
	"context"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/multislice/multislice/internal/gke"
)

func tpuJob(name string, parallelism int32, chips string, sel map[string]string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Spec: batchv1.JobSpec{
			CompletionMode: ptr.To(batchv1.IndexedCompletion), Parallelism: ptr.To(parallelism), Completions: ptr.To(parallelism),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				NodeSelector: sel,
				Containers:   []corev1.Container{{Name: "tpu", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{gke.TPUResource: resource.MustParse(chips)}}}},
			}},
		},
	}
}

// Standing aside (GKE's webhook does the job), both webhooks allow a TPU
// Job unchanged, even one whose shape ours would refuse.
func TestStandAside(t *testing.T) {
	w := &JobWebhook{StandAside: true}
	job := tpuJob("train", 4, "4", map[string]string{gke.AcceleratorLabel: "tpu-v5-lite-podslice", gke.TopologyLabel: "4x4"})
	before := job.DeepCopy()
	if err := w.Default(context.Background(), job); err != nil || !equality.Semantic.DeepEqual(job, before) {
		t.Errorf("Default changed the Job: %v", err)
	}
	job.Spec.Template.Spec.NodeSelector[gke.TopologyLabel] = "7x7"
	if _, err := w.ValidateCreate(context.Background(), job); err != nil {
		t.Errorf("ValidateCreate refused: %v", err)
	}
}
