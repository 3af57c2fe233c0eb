package gke_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/testobj"
)

func node(name string, ready bool, since time.Time, edit func(*corev1.Node)) corev1.Node {
	edits := []func(*corev1.Node){testobj.ReadySince(since)}
	if !ready {
		edits[0] = testobj.NotReadySince(since)
	}
	if edit != nil {
		edits = append(edits, edit)
	}
	return testobj.Node(name, edits...)
}

func TestSliceProblem(t *testing.T) {
	now := time.Now()
	ok := func(name string) corev1.Node { return node(name, true, now.Add(-time.Hour), nil) }
	grace := 10 * time.Second
	for _, tc := range []struct {
		name     string
		nodes    []corev1.Node
		expected int
		grace    time.Duration
		want     string // "" healthy, else a part of the reason
	}{
		{"healthy", []corev1.Node{ok("a"), ok("b")}, 2, grace, ""},
		{"no hosts", nil, 2, grace, "every host is gone"},
		{"a host gone", []corev1.Node{ok("a")}, 2, grace, "1 of its 2 hosts are gone"},
		{"NotReady within the grace", []corev1.Node{ok("a"), node("b", false, now.Add(-5*time.Second), nil)}, 2, grace, ""},
		{"NotReady past the grace", []corev1.Node{ok("a"), node("b", false, now.Add(-11*time.Second), nil)}, 2, grace, "host b is NotReady for 11s"},
		{"maintenance", []corev1.Node{ok("a"), node("b", true, now, func(n *corev1.Node) { n.Labels[gke.ActiveMaintenanceLabel] = "ONGOING" })}, 2, grace, "under maintenance"},
		{"impending termination", []corev1.Node{node("a", true, now, func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: gke.ImpendingTerminationTaint, Effect: corev1.TaintEffectNoSchedule}}
		})}, 1, grace, "impending termination"},
		{"cordoned", []corev1.Node{node("a", true, now, func(n *corev1.Node) { n.Spec.Unschedulable = true })}, 1, grace, "cordoned"},
		{"being deleted", []corev1.Node{node("a", true, now, func(n *corev1.Node) { n.DeletionTimestamp = &metav1.Time{Time: now} })}, 1, grace, "being deleted"},
		{"NotReady, no grace (the cloud, placement)", []corev1.Node{ok("a"), node("b", false, now, nil)}, 2, 0, "host b is NotReady"},
		{"host count unknown: one is whole", []corev1.Node{ok("a")}, 0, grace, ""},
		{"the first host by name", []corev1.Node{node("b", true, now, func(n *corev1.Node) { n.Spec.Unschedulable = true }), node("a", false, now.Add(-time.Minute), nil)}, 2, grace, "host a is NotReady for 1m0s"},
		{"no Ready condition, old node", []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "a", CreationTimestamp: metav1.NewTime(now.Add(-time.Minute))}}}, 1, grace, "NotReady"},
	} {
		why := gke.SliceProblem(tc.nodes, tc.expected, tc.grace, now)
		if (why != "") != (tc.want != "") || !strings.Contains(why, tc.want) {
			t.Errorf("%s: SliceProblem = %q; want %q", tc.name, why, tc.want)
		}
	}
}

func TestGraceLeft(t *testing.T) {
	now := time.Now()
	grace := 10 * time.Second
	for _, tc := range []struct {
		name  string
		nodes []corev1.Node
		want  time.Duration
	}{
		{"all Ready", []corev1.Node{node("a", true, now.Add(-time.Hour), nil)}, 0},
		{"one NotReady for 3s", []corev1.Node{node("a", true, now, nil), node("b", false, now.Add(-3*time.Second), nil)}, 7 * time.Second},
		{"the first to run out counts", []corev1.Node{node("a", false, now.Add(-8*time.Second), nil), node("b", false, now.Add(-1*time.Second), nil)}, 2 * time.Second},
		{"past its grace: SliceProblem's business", []corev1.Node{node("a", false, now.Add(-time.Minute), nil)}, 0},
		{"no hosts", nil, 0},
	} {
		if got := gke.GraceLeft(tc.nodes, grace, now); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
