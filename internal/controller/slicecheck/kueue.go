package slicecheck

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/multislice/multislice/internal/gke"
)

// Kueue's objects are read unstructured, in Kueue's v1beta2: the manager
// does not depend on Kueue's module.
var (
	WorkloadKind       = schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: "Workload"}
	AdmissionCheckKind = schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: "AdmissionCheck"}
)

// ServesKueue: the API server serves Kueue's Workloads and
// AdmissionChecks (a cache cannot watch a kind that is not served).
func ServesKueue(d discovery.DiscoveryInterface) bool {
	list, err := d.ServerResourcesForGroupVersion(WorkloadKind.GroupVersion().String())
	if err != nil {
		return false
	}
	found := map[string]bool{}
	for _, r := range list.APIResources {
		found[r.Name] = true
	}
	return found["workloads"] && found["admissionchecks"]
}

// newObject is an empty object of kind k.
func newObject(k schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(k)
	return u
}

// newList is an empty list of kind k.
func newList(k schema.GroupVersionKind) *unstructured.UnstructuredList {
	u := &unstructured.UnstructuredList{}
	u.SetGroupVersionKind(k.GroupVersion().WithKind(k.Kind + "List"))
	return u
}

// checkState is the state of the first of checks on Workload w.
func checkState(w *unstructured.Unstructured, checks map[string]bool) (name, state string, ok bool) {
	list, _, _ := unstructured.NestedSlice(w.Object, "status", "admissionChecks")
	for _, item := range list {
		m, _ := item.(map[string]any)
		if n, _ := m["name"].(string); checks[n] {
			s, _ := m["state"].(string)
			return n, s, true
		}
	}
	return "", "", false
}

// setCheckState writes state and message into check name of w; false
// when they are there already.
func setCheckState(w *unstructured.Unstructured, name, state, message string, now time.Time) bool {
	list, _, _ := unstructured.NestedSlice(w.Object, "status", "admissionChecks")
	for i, item := range list {
		m, _ := item.(map[string]any)
		if m["name"] != name {
			continue
		}
		if m["state"] == state && m["message"] == message {
			return false
		}
		if m["state"] != state {
			m["lastTransitionTime"] = now.UTC().Format(time.RFC3339)
		}
		m["state"], m["message"] = state, message
		list[i] = m
		return unstructured.SetNestedSlice(w.Object, list, "status", "admissionChecks") == nil
	}
	return false
}

// conditionTrue: w has condition t with status True.
func conditionTrue(w *unstructured.Unstructured, t string) bool {
	conds, _, _ := unstructured.NestedSlice(w.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == t {
			return m["status"] == string(metav1.ConditionTrue)
		}
	}
	return false
}

// ownerJobSet is the name of the JobSet whose Workload w is ("" when it is not a JobSet's).
func ownerJobSet(w *unstructured.Unstructured) string {
	for _, ref := range w.GetOwnerReferences() {
		if ref.Kind == "JobSet" && strings.HasPrefix(ref.APIVersion, "jobset.x-k8s.io/") {
			return ref.Name
		}
	}
	return ""
}

// assignedHosts are the hosts Kueue's topology-aware scheduling gave the
// pods of pod set podSet, one per pod in rank order (a domain of n pods
// named n times); nil when Kueue assigned the pod set no topology.
func assignedHosts(w *unstructured.Unstructured, podSet string) ([]string, error) {
	psas, _, _ := unstructured.NestedSlice(w.Object, "status", "admission", "podSetAssignments")
	for _, item := range psas {
		psa, _ := item.(map[string]any)
		if psa["name"] != podSet {
			continue
		}
		ta, ok := psa["topologyAssignment"].(map[string]any)
		if !ok {
			return nil, nil
		}
		return hostsOf(ta)
	}
	return nil, nil
}

// hostsOf expands a TopologyAssignment (v1beta2: slices of domains, each
// level's values given once for the slice or per domain, with an optional
// common prefix and suffix; pod counts likewise) into its lowest level's
// values, one per pod, in order. The lowest level must be the host name.
func hostsOf(ta map[string]any) ([]string, error) {
	levels, _, _ := unstructured.NestedStringSlice(ta, "levels")
	if len(levels) == 0 || levels[len(levels)-1] != gke.HostnameLabel {
		return nil, fmt.Errorf("Kueue's topology ends at level %v, not %s: a Slice is formed from the hosts Kueue chose", levels, gke.HostnameLabel)
	}
	last := len(levels) - 1
	var hosts []string
	slices, _, _ := unstructured.NestedSlice(ta, "slices")
	for i, item := range slices {
		s, _ := item.(map[string]any)
		n, _, _ := unstructured.NestedInt64(s, "domainCount")
		values, _, _ := unstructured.NestedSlice(s, "valuesPerLevel")
		if len(values) != len(levels) {
			return nil, fmt.Errorf("topology assignment slice %d: %d levels of values for %d levels", i, len(values), len(levels))
		}
		level, _ := values[last].(map[string]any)
		counts, _ := s["podCounts"].(map[string]any)
		for d := range int(n) {
			host, err := value(level, d)
			if err != nil {
				return nil, fmt.Errorf("topology assignment slice %d, domain %d: %w", i, d, err)
			}
			count, err := podCount(counts, d)
			if err != nil {
				return nil, fmt.Errorf("topology assignment slice %d, domain %d: %w", i, d, err)
			}
			for range count {
				hosts = append(hosts, host)
			}
		}
	}
	return hosts, nil
}

// value is domain d's value at one level: universal, or prefix + roots[d] + suffix.
func value(level map[string]any, d int) (string, error) {
	if u, ok := level["universal"].(string); ok {
		return u, nil
	}
	ind, _ := level["individual"].(map[string]any)
	roots, _, _ := unstructured.NestedStringSlice(ind, "roots")
	if d >= len(roots) {
		return "", fmt.Errorf("%d values for domain index %d", len(roots), d)
	}
	prefix, _ := ind["prefix"].(string)
	suffix, _ := ind["suffix"].(string)
	return prefix + roots[d] + suffix, nil
}

// podCount is domain d's pod count: universal, or individual[d].
func podCount(counts map[string]any, d int) (int64, error) {
	if u, ok := counts["universal"].(int64); ok {
		return u, nil
	}
	ind, _ := counts["individual"].([]any)
	if d >= len(ind) {
		return 0, fmt.Errorf("%d pod counts for domain index %d", len(ind), d)
	}
	n, ok := ind[d].(int64)
	if !ok {
		return 0, fmt.Errorf("pod count %v is not a whole number", ind[d])
	}
	return n, nil
}
