package gke

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/multislice/multislice/internal/tpu"
)

// What a node says about its host's health, as GKE and the kubelet signal
// it; slice.go makes the one slice rule of them.

// NodeReady: the node's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	_, notReady := NotReadySince(n)
	return !notReady
}

// NotReadySince is when the node's Ready condition left True, and whether
// it is not Ready now (no condition counts as not Ready since creation).
func NotReadySince(n *corev1.Node) (time.Time, bool) {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.LastTransitionTime.Time, c.Status != corev1.ConditionTrue
		}
	}
	return n.CreationTimestamp.Time, true
}

// HostProblem names what makes the host unfit whatever its readiness: it
// is being deleted, its termination is impending, maintenance is ongoing,
// or it is cordoned for repair. "" when none.
func HostProblem(n *corev1.Node) string {
	if n.DeletionTimestamp != nil {
		return fmt.Sprintf("host %s is being deleted", n.Name)
	}
	for _, t := range n.Spec.Taints {
		if t.Key == ImpendingTerminationTaint {
			return fmt.Sprintf("host %s has an impending termination (taint %s)", n.Name, t.Key)
		}
	}
	if n.Labels[ActiveMaintenanceLabel] == "ONGOING" {
		return fmt.Sprintf("host %s is under maintenance (%s=ONGOING)", n.Name, ActiveMaintenanceLabel)
	}
	if n.Spec.Unschedulable {
		return fmt.Sprintf("host %s is cordoned for repair", n.Name)
	}
	return ""
}

// SliceHosts is the number of hosts of the TPU slice a node belongs to, as
// its accelerator and topology labels say; false for a node without them
// (not a TPU node, or labels the catalogue does not know).
func SliceHosts(n *corev1.Node) (int, bool) {
	s, err := tpu.NewShape(n.Labels[AcceleratorLabel], n.Labels[TopologyLabel], "")
	if err != nil {
		return 0, false
	}
	return s.Hosts, true
}

// RequestsTPU: a container of the pod (init containers included) asks for
// TPU chips.
func RequestsTPU(spec corev1.PodSpec) bool {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			_, limit := cs[i].Resources.Limits[TPUResource]
			_, request := cs[i].Resources.Requests[TPUResource]
			if limit || request {
				return true
			}
		}
	}
	return false
}

// FitForWork: a node placement may give new work to: fit under the slice
// rule with no grace, and without the taints the node lifecycle controller
// puts on a lost node.
func FitForWork(n *corev1.Node) bool {
	if HostUnfit(n, 0, time.Time{}) != "" {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return false
		}
	}
	return true
}
