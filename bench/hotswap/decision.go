package main

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/nodelabels"
	"github.com/multislice/multislice/internal/placement"
	"github.com/multislice/multislice/test/framework"
)

// decisionCost times placement.HotSwap alone at 1,024 hosts: one group of
// 64 pools of 16 hosts, 60 JobSets of mixed priority holding one pool
// each, and a 4-slice JobSet whose 4 pools all broke: no single victim
// fits, so it is the greedy path (every candidate tried alone, then added
// one by one, then pruned), the most a decision costs.
func decisionCost(n int) {
	const pools, hosts, holders = 64, 16, 60
	var domains []placement.Domain
	held := map[string]placement.Holder{}
	for i := 0; i < pools; i++ {
		name := fmt.Sprintf("np-%d", i)
		d := placement.Domain{Value: name, Group: "g", ExpectedHosts: hosts}
		for h := 0; h < hosts; h++ {
			host := fmt.Sprintf("%s-%d", name, h)
			d.Nodes = append(d.Nodes, placement.Node{Name: host, Healthy: i >= holders,
				Labels: nodelabels.Of(host, map[string]string{gke.NodePoolLabel: name, gke.MultisliceGroupLabel: "g", gke.TopologyLabel: "4x4x4"}),
				Taints: []corev1.Taint{{Key: gke.TPUTaintKey, Value: gke.TPUTaintValue, Effect: corev1.TaintEffectNoSchedule}}})
		}
		if i < holders {
			js := fmt.Sprintf("ns/js-%d", i)
			d.Holder, held[js] = js, placement.Holder{Priority: int32(i % 7 * 100)}
			for h := range d.Nodes {
				d.Nodes[h].Healthy = true
			}
		}
		domains = append(domains, d)
	}
	for i := holders; i < pools; i++ { // the 4 broken pools
		domains[i].Nodes[0].Healthy = false
	}
	req := placement.Request{JobSet: "ns/high", Key: gke.NodePoolLabel, SameGroup: true}
	for j := 0; j < 4; j++ {
		req.Jobs = append(req.Jobs, placement.JobRequest{Name: fmt.Sprintf("high-slice-%d", j), Pods: hosts, RequestsTPU: true,
			NodeSelector: map[string]string{gke.TopologyLabel: "4x4x4", gke.MultisliceGroupLabel: "g"}})
	}
	me := placement.Waiter{JobSet: "ns/high", Key: gke.NodePoolLabel, Priority: 1000, Request: req}
	s := placement.Snapshot{Domains: domains}
	var took []time.Duration
	var victims int
	for i := 0; i < n; i++ {
		began := time.Now()
		swap, ok := placement.HotSwap(me, nil, s, held)
		took = append(took, time.Since(began))
		if !ok {
			fmt.Println("no swap found")
			return
		}
		victims = len(swap.Victims)
	}
	sort.Slice(took, func(a, b int) bool { return took[a] < took[b] })
	fmt.Printf("HotSwap at %d hosts, %d holders, greedy path (%d victims): median %s (%s-%s), N=%d, load %s; goal <= 10ms\n",
		pools*hosts, holders, victims, took[n/2].Round(time.Microsecond), took[0].Round(time.Microsecond), took[n-1].Round(time.Microsecond), n, framework.LoadAverage())
}
