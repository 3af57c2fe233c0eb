// Package placement decides where the child Jobs of an exclusive-topology
// JobSet run: one whole topology domain (a node pool, for the key
// cloud.google.com/gke-nodepool) per Job, all Jobs at once or none, within
// one multislice group when the workload asks for one. It is pure: the
// controller gathers domains and requests, Assign answers.
package placement

import (
	"fmt"
	gslices "slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/nodelabels"
)

// Node is what placement needs to know about one node.
type Node struct {
	Name   string
	Labels nodelabels.Labels
	Taints []corev1.Taint
	// Healthy: fit for new work (gke.FitForWork).
	Healthy bool
}

// Domain is the set of nodes sharing one value of the topology key.
type Domain struct {
	Value string
	Nodes []Node
	// Group is the domain's multislice group ("" when it has none).
	Group string
	// ExpectedHosts is how many nodes a complete domain has (0: unknown,
	// then any node count is complete).
	ExpectedHosts int
	// Holder is the JobSet (namespace/name) that holds the domain, if any.
	Holder string
}

// Healthy: the slice rule (gke.SliceProblem) with no grace: no host gone,
// every node healthy.
func (d Domain) Healthy() bool {
	if gke.MissingHosts(len(d.Nodes), d.ExpectedHosts) != "" {
		return false
	}
	for _, n := range d.Nodes {
		if !n.Healthy {
			return false
		}
	}
	return true
}

// JobRequest is one child Job to place.
type JobRequest struct {
	Name string
	// Pods is how many pods must fit (one per host): the Job's parallelism.
	Pods         int
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
	// RequestsTPU: ExtendedResourceToleration lets such pods tolerate the
	// google.com/tpu taint without saying so.
	RequestsTPU bool
	// Previous is the domain this Job held before a restart, kept if still fit.
	Previous string
}

// Request is one JobSet's placement request.
type Request struct {
	JobSet string // namespace/name
	// Key is the topology label key, e.g. cloud.google.com/gke-nodepool.
	Key  string
	Jobs []JobRequest
	// SameGroup: all domains must come from one multislice group.
	SameGroup bool
}

// Result is the outcome of Assign.
type Result struct {
	// Domains maps Job name to domain value; nil when the JobSet does not fit.
	Domains map[string]string
	// Why explains a failure: what is needed and what is free.
	Why string
}

// Assign picks a distinct free, healthy, complete and suitable domain for
// every Job, or none at all. A success reads only the free domains it tries;
// only a failure looks at every domain, to say whether any could ever fit.
func Assign(req Request, domains []Domain) Result {
	if len(req.Jobs) == 0 {
		return Result{Domains: map[string]string{}}
	}
	usable := make([]Domain, 0, len(domains))
	for _, d := range domains {
		if (d.Holder == "" || d.Holder == req.JobSet) && d.Healthy() {
			usable = append(usable, d)
		}
	}
	var got map[string]string
	var why string
	if req.SameGroup {
		got, why = matchInOneGroup(req, usable)
	} else if got = match(req.Jobs, usable); got == nil {
		why = fmt.Sprintf("needs %d free %s; fewer are free now", len(req.Jobs), describe(req)) // no count: see matchInOneGroup
	}
	switch {
	case got != nil:
		return Result{Domains: got}
	case !anyFits(req.Jobs[0], domains):
		return Result{Why: fmt.Sprintf("none of the cluster's %d domains suits it: it needs %s whose nodes all match the nodeSelector%s and are tolerated; nothing fits until one exists, so check the template%s",
			len(domains), describe(req), selectorText(req.Jobs[0].NodeSelector), poolsText(req.Jobs[0].NodeSelector, domains))}
	}
	return Result{Why: why}
}

// matchInOneGroup matches the Jobs within one multislice group: first the
// group that has most of the Jobs' previous domains (so a Job keeps its
// domain while it is fit, whichever group best fit would pick now), then
// the group with the fewest suitable free domains that still fits (best
// fit), so large groups stay whole for large workloads.
func matchInOneGroup(req Request, usable []Domain) (map[string]string, string) {
	groups := map[string][]Domain{}
	groupOf := map[string]string{}
	for _, d := range usable {
		if d.Group != "" {
			groups[d.Group] = append(groups[d.Group], d)
			groupOf[d.Value] = d.Group
		}
	}
	kept := map[string]int{}
	for _, j := range req.Jobs {
		if g, ok := groupOf[j.Previous]; ok && j.Previous != "" {
			kept[g]++
		}
	}
	names := make([]string, 0, len(groups))
	fitting := make(map[string]int, len(groups))
	for g, ds := range groups {
		names = append(names, g)
		fitting[g] = countFits(req.Jobs[0], ds)
	}
	sort.Slice(names, func(i, j int) bool {
		if ki, kj := kept[names[i]], kept[names[j]]; ki != kj {
			return ki > kj
		}
		if ci, cj := fitting[names[i]], fitting[names[j]]; ci != cj {
			return ci < cj
		}
		return names[i] < names[j]
	})
	for _, g := range names {
		if got := match(req.Jobs, groups[g]); got != nil {
			return got, ""
		}
	}
	// No free count in the message: it would change, and be written, as
	// other JobSets come and go while what this one waits for does not.
	return nil, fmt.Sprintf("needs %d free %s in one multislice group; no group has that many free now", len(req.Jobs), describe(req))
}

// match assigns distinct domains to jobs, preferring each Job's previous
// domain, then a domain nothing runs on over one where the JobSet's own
// pods of a previous attempt still stop (their Job, failed, holds no pin:
// its successor may come back there, another Job would wait for them);
// nil when some Job finds none.
func match(jobs []JobRequest, domains []Domain) map[string]string {
	taken := map[string]bool{}
	out := make(map[string]string, len(jobs))
	byValue := make(map[string]Domain, len(domains))
	for _, d := range domains {
		byValue[d.Value] = d
	}
	var rest []JobRequest
	for _, j := range jobs {
		if d, ok := byValue[j.Previous]; ok && j.Previous != "" && !taken[d.Value] && fits(j, d) {
			out[j.Name], taken[d.Value] = d.Value, true
		} else {
			rest = append(rest, j)
		}
	}
	emptyFirst := append([]Domain(nil), domains...)
	sort.SliceStable(emptyFirst, func(a, b int) bool { return emptyFirst[a].Holder == "" && emptyFirst[b].Holder != "" })
	for _, j := range rest {
		found := false
		for _, d := range emptyFirst {
			if !taken[d.Value] && fits(j, d) {
				out[j.Name], taken[d.Value], found = d.Value, true, true
				break
			}
		}
		if !found {
			return nil
		}
	}
	return out
}

// fits: every node matches the Job's nodeSelector and its taints are
// tolerated, and, for TPU Jobs (one pod per host of a slice), there is a
// node for every pod. Other pods share a domain's nodes as the scheduler
// decides, as with upstream's exclusive placement.
func fits(j JobRequest, d Domain) bool {
	if j.RequestsTPU && len(d.Nodes) < j.Pods {
		return false
	}
	for _, n := range d.Nodes {
		if !selects(j.NodeSelector, n.Labels) || !tolerates(j, n.Taints) {
			return false
		}
	}
	return true
}

// selects: the node has every label of the nodeSelector, with its value
// (the scheduler's reading of a nodeSelector).
func selects(nodeSelector map[string]string, nodeLabels nodelabels.Labels) bool {
	for k, v := range nodeSelector {
		if got, ok := nodeLabels.Get(k); !ok || got != v {
			return false
		}
	}
	return true
}

func tolerates(j JobRequest, taints []corev1.Taint) bool {
	for i := range taints {
		t := &taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if j.RequestsTPU && t.Key == gke.TPUTaintKey {
			continue
		}
		ok := false
		for k := range j.Tolerations {
			ok = ok || j.Tolerations[k].ToleratesTaint(klog.Background(), t, true)
		}
		if !ok {
			return false
		}
	}
	return true
}

func anyFits(j JobRequest, domains []Domain) bool {
	for _, d := range domains {
		if fits(j, d) {
			return true
		}
	}
	return false
}

func countFits(j JobRequest, domains []Domain) int {
	n := 0
	for _, d := range domains {
		if fits(j, d) {
			n++
		}
	}
	return n
}

// describe names the kind of domain a JobSet needs, e.g. "tpu-v4-podslice 2x2x2 pools".
func describe(req Request) string {
	j := req.Jobs[0]
	var parts []string
	for _, k := range []string{gke.AcceleratorLabel, gke.TopologyLabel} {
		if v, ok := j.NodeSelector[k]; ok {
			parts = append(parts, v)
		}
	}
	unit := "domains of " + req.Key
	if req.Key == gke.NodePoolLabel {
		unit = "pools"
	} else if pool, ok := j.NodeSelector[gke.NodePoolLabel]; ok {
		unit += " in node pool " + pool // Pathways' head: a host of cpu-np
	}
	parts = append(parts, fmt.Sprintf("%s (%d hosts each)", unit, j.Pods))
	return strings.Join(parts, " ")
}

// poolsText names the node pools there are when the nodeSelector asks for
// one (a Pathways head's cpu-np): the fix is then to add it or pick one.
func poolsText(sel map[string]string, domains []Domain) string {
	want, ok := sel[gke.NodePoolLabel]
	if !ok {
		return ""
	}
	var pools []string
	for _, d := range domains {
		for _, n := range d.Nodes {
			if p := n.Labels.Value(gke.NodePoolLabel); p != "" && !gslices.Contains(pools, p) {
				pools = append(pools, p)
			}
		}
	}
	sort.Strings(pools)
	if len(pools) > 8 {
		pools = append(pools[:8], fmt.Sprintf("... (%d in all)", len(pools)))
	}
	if len(pools) == 0 {
		return fmt.Sprintf(" (no node pool %s; the cluster's nodes have no %s label)", want, gke.NodePoolLabel)
	}
	return fmt.Sprintf(" (no node pool %s among the pools %s: add it, e.g. multislice nodepool create %s --machine-type=e2-standard-8 --num-nodes=1)",
		want, strings.Join(pools, ", "), want)
}

func selectorText(sel map[string]string) string {
	if len(sel) == 0 {
		return ""
	}
	keys := make([]string, 0, len(sel))
	for k := range sel {
		keys = append(keys, k+"="+sel[k])
	}
	sort.Strings(keys)
	return " (" + strings.Join(keys, ", ") + ")"
}
