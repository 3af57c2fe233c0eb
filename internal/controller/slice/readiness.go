// Package slice is the slice controller of dynamic slicing: it judges
// whether each Slice (accelerator.gke.io/v1beta1) can run work, from the
// hosts of its partitions (readiness.go, pure), and lets go the Slices of
// JobSets that are gone (slice.go). The JobSet controller forms Slices;
// this one only watches them, so a Slice made by hand is judged the same.
package slice

import (
	"fmt"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slicev1beta1 "github.com/multislice/multislice/api/accelerator/v1beta1"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/slicing"
	"github.com/multislice/multislice/internal/tpu"
)

// Readiness is a Slice's Ready condition, from its partitions' hosts (by
// partition id) and the older Slices that share a partition with it
// (earlier: they keep it; this one fails).
func Readiness(s *slicev1beta1.Slice, hosts map[string][]corev1.Node, earlier []string) metav1.Condition {
	failed := func(msg string) metav1.Condition {
		return metav1.Condition{Type: slicev1beta1.ReadyCondition, Status: metav1.ConditionFalse, Reason: slicev1beta1.FailedReason, Message: msg}
	}
	if why := shapeProblem(s); why != "" {
		return failed(why)
	}
	if len(earlier) > 0 {
		sort.Strings(earlier)
		return failed(fmt.Sprintf("a partition of it is already in Slice %s: a partition belongs to one Slice at a time", strings.Join(earlier, ", ")))
	}
	want := cubeHosts
	if q := slicing.QuartersOf(s); q != 0 {
		want = bits.OnesCount8(q) * cubeHosts / 4
	}
	for _, id := range s.Spec.PartitionIDs {
		if why := partitionProblem(id, hosts[id], want); why != "" {
			return failed(why)
		}
	}
	return metav1.Condition{Type: slicev1beta1.ReadyCondition, Status: metav1.ConditionTrue, Reason: slicev1beta1.ReadyReason,
		Message: fmt.Sprintf("%d partitions, %d hosts, every one fit for work", len(s.Spec.PartitionIDs), want*len(s.Spec.PartitionIDs))}
}

// Overlap: two Slices of one partition share hosts unless both are
// sub-slices of different quarters.
func Overlap(a, b *slicev1beta1.Slice) bool {
	qa, qb := slicing.QuartersOf(a), slicing.QuartersOf(b)
	return qa == 0 || qb == 0 || qa&qb != 0
}

// HostsOf selects, of a partition's nodes, the Slice's own: all of them,
// or a sub-slice's quarters.
func HostsOf(s *slicev1beta1.Slice, nodes []corev1.Node) []corev1.Node {
	q := slicing.QuartersOf(s)
	if q == 0 {
		return nodes
	}
	mine := slicing.QuarterHosts(q)
	var out []corev1.Node
	for _, n := range nodes {
		if slices.Contains(mine, n.Labels[slicev1beta1.HostPositionLabel]) {
			out = append(out, n)
		}
	}
	return out
}

// cubeHosts are a 4x4x4 sub-block's hosts (4 chips each).
const cubeHosts = tpu.CubeChips / tpu.MultiHostChipsPerHost

// shapeProblem: a super-slice needs one partition per 64 chips of its
// topology, and its topology must form from cubes; a sub-slice one
// partition and quarters of it that make its topology.
func shapeProblem(s *slicev1beta1.Slice) string {
	shape, sub, err := tpu.DynamicSlice(s.Spec.Topology)
	if err != nil {
		return err.Error()
	}
	if sub {
		n := slicing.SubQuarters(shape.Topology)
		if q := slicing.QuartersOf(s); len(s.Spec.PartitionIDs) != 1 || bits.OnesCount8(q) != n {
			return fmt.Sprintf("sub-slice %s: one partition and %d of its quarters in annotation %s (got %d partitions, quarters %q)",
				s.Spec.Topology, n, slicev1beta1.QuartersAnnotation, len(s.Spec.PartitionIDs), s.Annotations[slicev1beta1.QuartersAnnotation])
		}
		return ""
	}
	if want := shape.Chips() / tpu.CubeChips; len(s.Spec.PartitionIDs) != want {
		return fmt.Sprintf("topology %s needs %d partitions, spec.partitionIds has %d", s.Spec.Topology, want, len(s.Spec.PartitionIDs))
	}
	return ""
}

// partitionProblem names what keeps a partition's hosts from work: the
// partition unknown, or the one slice rule (gke.SliceProblem, no grace:
// a host gone or unfit), or a host tainted as lost by the node lifecycle
// controller (as placement's gke.FitForWork judges it).
func partitionProblem(id string, nodes []corev1.Node, want int) string {
	if len(nodes) == 0 {
		return fmt.Sprintf("partition %s: no node has %s=%s", id, gke.PartitionCubeLabel, id)
	}
	if why := gke.SliceProblem(nodes, want, 0, time.Time{}); why != "" {
		return fmt.Sprintf("partition %s: %s", id, why)
	}
	for i := range nodes {
		if !gke.FitForWork(&nodes[i]) {
			return fmt.Sprintf("partition %s: host %s is tainted as lost by the node lifecycle controller", id, nodes[i].Name)
		}
	}
	return ""
}
