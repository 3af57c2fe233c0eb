package sim

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// A deleted simulated pod is overdue reapAfter past when kwok's Stage
// removes it: kubeletStop after its deletion, or at the end of its grace period when it
// ignores SIGTERM. Only a bound pod not yet removed is looked at.
func TestReapTime(t *testing.T) {
	deleted := time.Date(2026, 12, 2, 17, 0, 0, 0, time.UTC) // the request
	pod := func(grace int64, node string, annotations map[string]string, finalizers ...string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Annotations: annotations, DeletionGracePeriodSeconds: ptr.To(grace),
				DeletionTimestamp: &metav1.Time{Time: deleted.Add(time.Duration(grace) * time.Second)}, Finalizers: finalizers},
			Spec: corev1.PodSpec{NodeName: node},
		}
	}
	for _, tc := range []struct {
		name     string
		pod      *corev1.Pod
		reapable bool
		at       time.Time
	}{
		{"stopped as a kubelet stops it", pod(30, "n", nil), true, deleted.Add(kubeletStop + reapAfter)},
		{"ignores SIGTERM", pod(30, "n", map[string]string{GracefulStopAnnotation: "true"}), true, deleted.Add(30*time.Second + reapAfter)},
		{"never bound", pod(30, "", nil), false, time.Time{}},
		{"removed, waits for finalizers", pod(0, "n", nil, "batch.kubernetes.io/job-tracking"), false, time.Time{}},
		{"removed with no finalizer, still there: the API server's delete was cut", pod(0, "n", nil), true, deleted.Add(kubeletStop + reapAfter)},
	} {
		if got := reapable(tc.pod); got != tc.reapable {
			t.Errorf("%s: reapable = %v, want %v", tc.name, got, tc.reapable)
		}
		if tc.reapable && !reapTime(tc.pod).Equal(tc.at) {
			t.Errorf("%s: reapTime = %s, want %s", tc.name, reapTime(tc.pod), tc.at)
		}
	}
	if reapable(&corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}}) {
		t.Error("a pod not deleted is reapable")
	}
}
