package dashboard

import (
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/testobj"
)

// bigSnapshot is 64 pools x 16 hosts, 64 JobSets of one 16-pod slice.
func bigSnapshot() Snapshot {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var s Snapshot
	s.Now = now
	for p := range 64 {
		pool := fmt.Sprintf("big-np-%d", p)
		js := fmt.Sprintf("train-%02d", p)
		s.JobSets = append(s.JobSets, api.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: js}})
		labels := map[string]string{api.JobSetNameKey: js, "job-name": js + "-slice-0", api.JobIndexKey: "0", api.RestartsKey: "0"}
		s.Jobs = append(s.Jobs, batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: js + "-slice-0", Labels: labels,
			Annotations: map[string]string{api.AssignedDomainAnnotation: pool}}})
		for h := range 16 {
			node := fmt.Sprintf("gke-%s-%d", pool, h)
			s.Nodes = append(s.Nodes, testobj.Node(node, testobj.TPUHost(pool, "4x4x4", "big")))
			s.Pods = append(s.Pods, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("%s-slice-0-%d-abcde", js, h), Labels: labels,
				Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: fmt.Sprint(h)}},
				Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning}})
		}
		for e := range 4 {
			s.Events = append(s.Events, corev1.Event{InvolvedObject: corev1.ObjectReference{Namespace: "default", Name: js},
				Reason: "DomainsAssigned", Message: "each child Job has its own node pool", EventTime: metav1.NewMicroTime(now.Add(time.Duration(e) * time.Second))})
		}
	}
	return s
}

func BenchmarkBuild(b *testing.B) {
	s := bigSnapshot()
	for b.Loop() {
		Build(s)
	}
}

// BenchmarkRender renders the whole page (every section new).
func BenchmarkRender(b *testing.B) {
	page := Build(bigSnapshot())
	var size int
	for b.Loop() {
		sections, err := (&renderer{}).render(page)
		if err != nil {
			b.Fatal(err)
		}
		size = len(assemble(sections))
	}
	b.ReportMetric(float64(size)/1024, "KiB")
}

// BenchmarkRenderOneChange: one JobSet changed since the previous page.
func BenchmarkRenderOneChange(b *testing.B) {
	s := bigSnapshot()
	var r renderer
	if _, err := r.render(Build(s)); err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		s.Pods[0].Status.Phase = []corev1.PodPhase{corev1.PodPending, corev1.PodRunning}[i%2]
		i++
		if _, err := r.render(Build(s)); err != nil {
			b.Fatal(err)
		}
	}
}
