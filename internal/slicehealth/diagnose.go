// Package slicehealth treats a slice (a node pool) as one unit: one host
// that is NotReady past a short grace, gone, cordoned for repair, or under
// maintenance makes the whole slice unhealthy. The Reconciler fails the
// child Job running there at once, so its JobSet restarts every slice on
// healthy ones, instead of waiting out the 300 s eviction timeout.
package slicehealth

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/multislice/multislice/internal/gke"
)

// Diagnose says whether a slice whose hosts are nodes (expected is how many
// it should have; 0 if unknown) is unhealthy now, and why.
func Diagnose(nodes []corev1.Node, expected int, grace time.Duration, now time.Time) (bool, string) {
	sorted := append([]corev1.Node(nil), nodes...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	if len(sorted) == 0 {
		return true, "every host is gone"
	}
	if expected > 0 && len(sorted) < expected {
		return true, fmt.Sprintf("%d of its %d hosts are gone", expected-len(sorted), expected)
	}
	for i := range sorted {
		n := &sorted[i]
		if problem := gke.HostProblem(n); problem != "" {
			return true, problem
		}
		if since, notReady := gke.NotReadySince(n); notReady && now.Sub(since) >= grace {
			return true, fmt.Sprintf("host %s is NotReady for %s", n.Name, now.Sub(since).Round(time.Second))
		}
	}
	return false, ""
}

// GraceLeft is how long until the first host of the slice that is
// NotReady within its grace runs out of it: when to look again. 0 when no
// host is within its grace.
func GraceLeft(nodes []corev1.Node, grace time.Duration, now time.Time) time.Duration {
	var left time.Duration
	for i := range nodes {
		if since, notReady := gke.NotReadySince(&nodes[i]); notReady {
			if d := grace - now.Sub(since); d > 0 && (left == 0 || d < left) {
				left = d
			}
		}
	}
	return left
}
