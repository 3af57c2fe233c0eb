package gke

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The one rule for a slice's health: a slice (the nodes of one pool) is
// whole when none of its hosts is gone and every host is fit. Slice health
// (which fails a running slice), the simulated cloud (which repairs a pool)
// and placement (which gives a pool new work) all judge by it, each with
// its own grace for a NotReady host: slice health a few seconds, the other
// two none.

// SliceProblem names what is wrong with the slice whose hosts are nodes
// (expected: how many it should have, 0 if unknown), "" when nothing: hosts
// gone, else the first host by name with a problem or NotReady for grace.
func SliceProblem(nodes []corev1.Node, expected int, grace time.Duration, now time.Time) string {
	if gone := MissingHosts(len(nodes), expected); gone != "" {
		return gone
	}
	sorted := make([]*corev1.Node, len(nodes))
	for i := range nodes {
		sorted[i] = &nodes[i]
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, n := range sorted {
		if problem := HostUnfit(n, grace, now); problem != "" {
			return problem
		}
	}
	return ""
}

// MissingHosts says which hosts of a slice are gone when it has have of
// expected (0: unknown, then only none is too few), "" when none is.
func MissingHosts(have, expected int) string {
	switch {
	case have == 0:
		return "every host is gone"
	case expected > 0 && have < expected:
		return fmt.Sprintf("%d of its %d hosts are gone", expected-have, expected)
	}
	return ""
}

// HostUnfit names what makes one host unfit: a HostProblem, or NotReady
// for at least grace (grace 0: NotReady at all). "" when it is fit.
func HostUnfit(n *corev1.Node, grace time.Duration, now time.Time) string {
	if problem := HostProblem(n); problem != "" {
		return problem
	}
	since, notReady := NotReadySince(n)
	switch {
	case !notReady:
		return ""
	case grace <= 0:
		return fmt.Sprintf("host %s is NotReady", n.Name)
	case now.Sub(since) >= grace:
		return fmt.Sprintf("host %s is NotReady for %s", n.Name, now.Sub(since).Round(time.Second))
	}
	return ""
}

// GraceLeft is how long until the first host of the slice that is NotReady
// within its grace runs out of it: when to look again. 0 when no host is
// within its grace.
func GraceLeft(nodes []corev1.Node, grace time.Duration, now time.Time) time.Duration {
	var left time.Duration
	for i := range nodes {
		if since, notReady := NotReadySince(&nodes[i]); notReady {
			if d := grace - now.Sub(since); d > 0 && (left == 0 || d < left) {
				left = d
			}
		}
	}
	return left
}
