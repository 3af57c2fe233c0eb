package manager

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

func TestSlimPodKeepsWhatPlacementAndRepairRead(t *testing.T) {
	tpu := corev1.ResourceRequirements{Limits: corev1.ResourceList{"google.com/tpu": resource.MustParse("4")}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "w-0", Namespace: "ns", Labels: map[string]string{
			"job-name": "w", batchv1.JobNameLabel: "w", api.JobSetNameKey: "js", "team": "a"},
			Annotations: map[string]string{"big": strings.Repeat("x", 4096)}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "main", Image: "python",
			Env: []corev1.EnvVar{{Name: "TPU_WORKER_HOSTNAMES", Value: strings.Repeat("h,", 500)}}, Resources: tpu}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	got, err := slimPod(pod)
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "w-0", Namespace: "ns", Labels: map[string]string{
			"job-name": "w", batchv1.JobNameLabel: "w", api.JobSetNameKey: "js"}},
		Spec:   corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "main", Resources: tpu}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("slimPod:\n got %+v\nwant %+v", got, want)
	}
}
