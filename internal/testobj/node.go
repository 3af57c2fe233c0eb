package testobj

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/multislice/multislice/internal/gke"
)

// Node is a Ready node with no labels, changed by edits in order.
func Node(name string, edits ...func(*corev1.Node)) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	for _, e := range edits {
		e(&n)
	}
	return n
}

// TPUHost puts the node in a TPU node pool as GKE labels it: v4, instance
// type ct4p-hightpu-4t, the given topology, in multislice group group.
func TPUHost(pool, topology, group string) func(*corev1.Node) {
	return func(n *corev1.Node) {
		n.Labels[gke.NodePoolLabel] = pool
		n.Labels[gke.AcceleratorLabel] = "tpu-v4-podslice"
		n.Labels[gke.TopologyLabel] = topology
		n.Labels[gke.InstanceTypeLabel] = "ct4p-hightpu-4t"
		n.Labels[gke.MultisliceGroupLabel] = group
	}
}

// Labels adds labels.
func Labels(kv map[string]string) func(*corev1.Node) {
	return func(n *corev1.Node) {
		for k, v := range kv {
			n.Labels[k] = v
		}
	}
}

// ReadySince makes the node Ready since t.
func ReadySince(t time.Time) func(*corev1.Node) { return readiness(corev1.ConditionTrue, t) }

// NotReadySince makes the node NotReady since t.
func NotReadySince(t time.Time) func(*corev1.Node) { return readiness(corev1.ConditionFalse, t) }

// NotReady makes the node NotReady (since the zero time).
var NotReady = NotReadySince(time.Time{})

func readiness(s corev1.ConditionStatus, t time.Time) func(*corev1.Node) {
	return func(n *corev1.Node) {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: s, LastTransitionTime: metav1.NewTime(t)}}
	}
}

// Cordoned marks the node unschedulable.
func Cordoned(n *corev1.Node) { n.Spec.Unschedulable = true }
