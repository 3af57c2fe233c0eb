package view

import (
	"sort"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
)

// Host states, worst first: what colours a host in the fleet view.
const (
	HostNotReady    = "notready"    // the kubelet stopped reporting
	HostRepairing   = "repairing"   // cordoned or being deleted: the cloud is replacing it
	HostMaintenance = "maintenance" // maintenance ongoing or termination impending
	HostMissing     = "missing"     // the slice's topology needs it, the cloud has not (re)created it
	HostHeld        = "held"        // a JobSet's slice is placed on its node pool
	HostSpare       = "spare"       // a healthy TPU host nobody holds
	HostReady       = "ready"       // a healthy host without TPUs
)

// Group is a multislice group (nodes labelled MultisliceGroup) or, for
// nodes without one, the rest of the cluster.
type Group struct {
	Name  string `json:"name"`
	Pools []Pool `json:"pools"`
}

// Pool is a node pool: one TPU slice.
type Pool struct {
	Name        string `json:"name"`
	Accelerator string `json:"accelerator"`
	Topology    string `json:"topology"`
	// Holder is the JobSet ("namespace/name") whose slice is placed here.
	Holder string `json:"holder"`
	// State is the worst state of its hosts.
	State string `json:"state"`
	Hosts []Host `json:"hosts"`
}

// Host is one node of a pool.
type Host struct {
	Name   string `json:"name"`
	State  string `json:"state"`
	Holder string `json:"holder,omitempty"`
}

// Fleet groups the nodes into multislice groups and node pools, with the
// health of every host and the JobSet that holds each pool (from the child
// Jobs' assigned domain, and from where JobSet pods run). groupLabel is the
// node label that names a multislice group ("" for GKE's MultisliceGroup).
func Fleet(groupLabel string, nodes []corev1.Node, jobs []batchv1.Job, pods []corev1.Pod) []Group {
	if groupLabel == "" {
		groupLabel = gke.MultisliceGroupLabel
	}
	holders := map[string]string{} // pool or node name -> JobSet
	for _, j := range jobs {
		if d := api.PinnedDomain(&j); d != "" && j.DeletionTimestamp == nil && api.JobOutcome(&j) == "" {
			holders[d] = j.Namespace + "/" + j.Labels[api.JobSetNameKey]
		}
	}
	for _, p := range pods {
		if js := p.Labels[api.JobSetNameKey]; js != "" && p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			holders["node/"+p.Spec.NodeName] = p.Namespace + "/" + js
		}
	}
	groups := map[string]map[string]*Pool{}
	expected := map[*Pool]int{} // the hosts of the pool's TPU slice, 0 if unknown
	for i := range nodes {
		n := &nodes[i]
		group := n.Labels[groupLabel]
		poolName := n.Labels[gke.NodePoolLabel]
		if poolName == "" {
			poolName = n.Name
		}
		if groups[group] == nil {
			groups[group] = map[string]*Pool{}
		}
		pool := groups[group][poolName]
		if pool == nil {
			pool = &Pool{Name: poolName, Accelerator: n.Labels[gke.AcceleratorLabel], Topology: n.Labels[gke.TopologyLabel], Holder: holders[poolName]}
			groups[group][poolName] = pool
			expected[pool], _ = gke.SliceHosts(n)
		}
		holder := pool.Holder
		if h := holders["node/"+n.Name]; h != "" {
			holder = h
		}
		pool.Hosts = append(pool.Hosts, Host{Name: n.Name, State: hostState(n, holder), Holder: holder})
	}
	var out []Group
	for name, pools := range groups {
		g := Group{Name: name}
		for _, p := range pools {
			sort.Slice(p.Hosts, func(a, b int) bool { return p.Hosts[a].Name < p.Hosts[b].Name })
			if want := expected[p]; want > len(p.Hosts) {
				for range want - len(p.Hosts) {
					p.Hosts = append(p.Hosts, Host{Name: "(not there)", State: HostMissing})
				}
			}
			p.State = worst(p.Hosts)
			g.Pools = append(g.Pools, *p)
		}
		sort.Slice(g.Pools, func(a, b int) bool { return g.Pools[a].Name < g.Pools[b].Name })
		out = append(out, g)
	}
	// Multislice groups by name, the ungrouped rest last.
	sort.Slice(out, func(a, b int) bool {
		if (out[a].Name == "") != (out[b].Name == "") {
			return out[b].Name == ""
		}
		return out[a].Name < out[b].Name
	})
	return out
}

func hostState(n *corev1.Node, holder string) string {
	switch {
	case !gke.NodeReady(n):
		return HostNotReady
	case n.DeletionTimestamp != nil || n.Spec.Unschedulable:
		return HostRepairing
	case gke.HostProblem(n) != "":
		return HostMaintenance
	case holder != "":
		return HostHeld
	case n.Labels[gke.AcceleratorLabel] != "":
		return HostSpare
	}
	return HostReady
}

var severity = map[string]int{HostNotReady: 0, HostRepairing: 1, HostMaintenance: 2, HostMissing: 3, HostHeld: 4, HostSpare: 5, HostReady: 6}

func worst(hosts []Host) string {
	w := HostReady
	for _, h := range hosts {
		if severity[h.State] < severity[w] {
			w = h.State
		}
	}
	return w
}
