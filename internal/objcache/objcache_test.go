package objcache

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
)

func TestSlimPodKeepsWhatIsRead(t *testing.T) {
	tpu := corev1.ResourceRequirements{Limits: corev1.ResourceList{gke.TPUResource: resource.MustParse("4")}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "w-0", Namespace: "ns", Labels: map[string]string{
			"job-name": "w", batchv1.JobNameLabel: "w", api.JobSetNameKey: "js", "team": "a"},
			Annotations: map[string]string{"big": strings.Repeat("x", 4096), batchv1.JobCompletionIndexAnnotation: "3"}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "main", Image: "python",
			Env: []corev1.EnvVar{{Name: "TPU_WORKER_HOSTNAMES", Value: strings.Repeat("h,", 500)}}, Resources: corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{gke.TPUResource: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("1Gi")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	got, err := SlimPod(pod)
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "w-0", Namespace: "ns", Labels: map[string]string{
			"job-name": "w", batchv1.JobNameLabel: "w", api.JobSetNameKey: "js"},
			Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: "3"}},
		Spec:   corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "main", Resources: tpu}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("SlimPod:\n got %+v\nwant %+v", got, want)
	}
}

// TestSlimNodeKeepsWhatPlacementAndSliceHealthRead: the facts placement
// and slice health decide on survive the slimming unchanged.
func TestSlimNodeKeepsWhatPlacementAndSliceHealthRead(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "h0", Labels: map[string]string{gke.NodePoolLabel: "np-0", gke.ActiveMaintenanceLabel: "ONGOING"},
			Annotations: map[string]string{"big": strings.Repeat("x", 4096)}, DeletionTimestamp: &since},
		Spec: corev1.NodeSpec{Unschedulable: true, Taints: []corev1.Taint{{Key: gke.ImpendingTerminationTaint, Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
				{Type: corev1.NodeReady, Status: corev1.ConditionFalse, LastTransitionTime: since, LastHeartbeatTime: since}},
			Images:   []corev1.ContainerImage{{Names: []string{strings.Repeat("i", 1024)}}},
			NodeInfo: corev1.NodeSystemInfo{KernelVersion: "6.1"},
		},
	}
	got, err := SlimNode(node)
	if err != nil {
		t.Fatal(err)
	}
	slim := got.(*corev1.Node)
	a, _ := gke.NotReadySince(node)
	b, _ := gke.NotReadySince(slim)
	if gke.NodeReady(slim) != gke.NodeReady(node) || gke.HostProblem(slim) != gke.HostProblem(node) ||
		gke.FitForWork(slim) != gke.FitForWork(node) || !a.Equal(b) || len(slim.Labels) != 2 || len(slim.Spec.Taints) != 1 {
		t.Errorf("the slim node decides differently: %+v", slim)
	}
	if slim.Annotations != nil || slim.Status.Images != nil || slim.Status.NodeInfo.KernelVersion != "" || len(slim.Status.Conditions) != 1 {
		t.Errorf("kept what nothing reads: %+v", slim)
	}
}
