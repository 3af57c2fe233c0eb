package realhost

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/localcluster/sim/fleet"
)

func TestTPUChipsPatch(t *testing.T) {
	node := func(labels map[string]string, chips string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: labels}}
		if chips != "" {
			q := resource.MustParse(chips)
			n.Status.Capacity = corev1.ResourceList{gke.TPUResource: q}
			n.Status.Allocatable = corev1.ResourceList{gke.TPUResource: q}
		}
		return n
	}
	realTPU := map[string]string{fleet.RealHostLabel: "true", gke.AcceleratorCountLabel: "4"}
	cases := []struct {
		name  string
		node  *corev1.Node
		patch bool
	}{
		{"real TPU host without chips", node(realTPU, ""), true},
		{"real TPU host zeroed by its kubelet", node(realTPU, "0"), true},
		{"real TPU host with its chips", node(realTPU, "4"), false},
		{"real CPU host", node(map[string]string{fleet.RealHostLabel: "true"}, ""), false},
		{"simulated TPU host", node(map[string]string{gke.AcceleratorCountLabel: "4"}, ""), false},
	}
	for _, c := range cases {
		if got := TPUChipsPatch(c.node) != nil; got != c.patch {
			t.Errorf("%s: patch %v, want %v", c.name, got, c.patch)
		}
	}
	want := `{"status":{"allocatable":{"google.com/tpu":"4"},"capacity":{"google.com/tpu":"4"}}}`
	if got := string(TPUChipsPatch(node(realTPU, "0"))); got != want {
		t.Errorf("patch = %s, want %s", got, want)
	}
}
