package slice

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slicev1beta1 "github.com/multislice/multislice/api/accelerator/v1beta1"
	"github.com/multislice/multislice/internal/slicing"
)

// cube is a partition's 16 hosts, Ready; edit changes host i.
func cube(id string, edit func(i int, n *corev1.Node)) []corev1.Node {
	out := make([]corev1.Node, cubeHosts)
	for i := range out {
		out[i] = corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("gke-%s-%d", id, i), Labels: map[string]string{slicev1beta1.HostPositionLabel: slicing.HostPos(i).String()}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
		if edit != nil {
			edit(i, &out[i])
		}
	}
	return out
}

func TestReadiness(t *testing.T) {
	slice := func(topology string, ids ...string) *slicev1beta1.Slice {
		return &slicev1beta1.Slice{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: slicev1beta1.SliceSpec{Type: "tpu7x", Topology: topology, PartitionIDs: ids}}
	}
	healthy := map[string][]corev1.Node{"a": cube("a", nil), "b": cube("b", nil)}
	sub := func(topology, quarters string, ids ...string) *slicev1beta1.Slice {
		s := slice(topology, ids...)
		s.Annotations = map[string]string{slicev1beta1.QuartersAnnotation: quarters}
		return s
	}
	hostsOf := func(s *slicev1beta1.Slice, all map[string][]corev1.Node) map[string][]corev1.Node {
		return map[string][]corev1.Node{"a": HostsOf(s, all["a"])}
	}
	for _, tc := range []struct {
		name    string
		s       *slicev1beta1.Slice
		hosts   map[string][]corev1.Node
		earlier []string
		ready   bool
		says    string
	}{
		{"two healthy cubes form 4x4x8", slice("4x4x8", "a", "b"), healthy, nil, true, "2 partitions, 32 hosts"},
		{"one partition short for the topology", slice("4x4x8", "a"), healthy, nil, false, "needs 2 partitions, spec.partitionIds has 1"},
		{"a topology no cubes form", slice("4x4x6", "a", "b"), healthy, nil, false, "cannot be formed"},
		{"a partition no node has", slice("4x4x8", "a", "z"), healthy, nil, false, "partition z: no node has"},
		{"a partition short of hosts", slice("4x4x4", "a"), map[string][]corev1.Node{"a": cube("a", nil)[:15]}, nil, false, "1 of its 16 hosts are gone"},
		{"a host NotReady fails it", slice("4x4x8", "a", "b"), map[string][]corev1.Node{"a": cube("a", nil), "b": cube("b", func(i int, n *corev1.Node) {
			if i == 3 {
				n.Status.Conditions[0].Status = corev1.ConditionFalse
			}
		})}, nil, false, "partition b: host gke-b-3 is NotReady"},
		{"an older Slice has the partition", slice("4x4x4", "a"), healthy, []string{"older"}, false, "already in Slice older"},
		{"a sub-slice of one quarter", sub("2x2x4", "1", "a"), hostsOf(sub("2x2x4", "1", "a"), healthy), nil, true, "1 partitions, 4 hosts"},
		{"a sub-slice of a half", sub("2x4x4", "0,2", "a"), hostsOf(sub("2x4x4", "0,2", "a"), healthy), nil, true, "1 partitions, 8 hosts"},
		{"a sub-slice without its quarters", sub("2x4x4", "", "a"), healthy, nil, false, "2 of its quarters in annotation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Readiness(tc.s, tc.hosts, tc.earlier)
			if (c.Status == metav1.ConditionTrue) != tc.ready || !strings.Contains(c.Message, tc.says) {
				t.Fatalf("Ready %s (%s): %s; want ready %v saying %q", c.Status, c.Reason, c.Message, tc.ready, tc.says)
			}
			if !tc.ready && c.Reason != slicev1beta1.FailedReason {
				t.Errorf("reason %s, want FAILED", c.Reason)
			}
		})
	}
}

func TestOverlap(t *testing.T) {
	mk := func(q string) *slicev1beta1.Slice {
		s := &slicev1beta1.Slice{}
		if q != "" {
			s.Annotations = map[string]string{slicev1beta1.QuartersAnnotation: q}
		}
		return s
	}
	for _, tc := range []struct {
		a, b string
		want bool
	}{{"", "", true}, {"", "0", true}, {"0", "1", false}, {"0,2", "2", true}, {"0,2", "1,3", false}} {
		if got := Overlap(mk(tc.a), mk(tc.b)); got != tc.want {
			t.Errorf("Overlap(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
