package placement

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/nodelabels"
)

const pool = gke.NodePoolLabel

// fleet builds groups of v4 2x2x2 pools (2 hosts each): "g1:4,g2:2" means
// group g1 with 4 pools and group g2 with 2.
func fleet(spec string) []Domain {
	var out []Domain
	for _, part := range strings.Split(spec, ",") {
		var g string
		var n int
		fmt.Sscanf(strings.Replace(part, ":", " ", 1), "%s %d", &g, &n)
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("%s-np-%d", g, i)
			d := Domain{Value: name, Group: g, ExpectedHosts: 2}
			for h := 0; h < 2; h++ {
				host := fmt.Sprintf("%s-%d", name, h)
				d.Nodes = append(d.Nodes, Node{Name: host, Healthy: true,
					Labels: nodelabels.Of(host, map[string]string{pool: name, gke.MultisliceGroupLabel: g, gke.TopologyLabel: "2x2x2"}),
					Taints: []corev1.Taint{{Key: gke.TPUTaintKey, Value: gke.TPUTaintValue, Effect: corev1.TaintEffectNoSchedule}}})
			}
			out = append(out, d)
		}
	}
	return out
}

func slices(js string, n int, sameGroup bool) Request {
	r := Request{JobSet: js, Key: pool, SameGroup: sameGroup}
	for i := 0; i < n; i++ {
		r.Jobs = append(r.Jobs, JobRequest{Name: fmt.Sprintf("%s-slice-%d", js, i), Pods: 2, RequestsTPU: true,
			NodeSelector: map[string]string{gke.TopologyLabel: "2x2x2"}})
	}
	return r
}

func TestAssign(t *testing.T) {
	cases := []struct {
		name    string
		req     Request
		domains func() []Domain
		want    int    // domains assigned; 0 = does not fit
		group   string // all assigned domains in this group
		why     string
	}{
		{name: "fits in one group", req: slices("a", 4, true), domains: func() []Domain { return fleet("g1:4") }, want: 4, group: "g1"},
		{name: "best fit picks the smaller group", req: slices("a", 2, true), domains: func() []Domain { return fleet("g1:4,g2:2") }, want: 2, group: "g2"},
		{name: "never across groups", req: slices("a", 4, true), domains: func() []Domain { return fleet("g1:2,g2:2") },
			why: "needs 4 free 2x2x2 pools (2 hosts each) in one multislice group; no group has that many free now"},
		{name: "across groups when not asked", req: slices("a", 4, false), domains: func() []Domain { return fleet("g1:2,g2:2") }, want: 4},
		{name: "held domains are not free", req: slices("b", 4, true), domains: func() []Domain {
			d := fleet("g1:4")
			d[0].Holder, d[1].Holder = "ns/a", "ns/a"
			return d
		}, why: "no group has that many free now"},
		{name: "own held domains are usable", req: slices("a", 2, true), domains: func() []Domain {
			d := fleet("g1:2")
			d[0].Holder, d[1].Holder = "a", "a"
			return d
		}, want: 2, group: "g1"},
		{name: "an unhealthy host spoils its pool", req: slices("a", 4, true), domains: func() []Domain {
			d := fleet("g1:4")
			d[2].Nodes[1].Healthy = false
			return d
		}, why: "no group has that many free now"},
		{name: "an incomplete pool is not used", req: slices("a", 2, true), domains: func() []Domain {
			d := fleet("g1:2")
			d[0].Nodes = d[0].Nodes[:1]
			return d
		}, why: "no group has that many free now"},
		{name: "nodeSelector must match every node", req: func() Request {
			r := slices("a", 1, false)
			r.Jobs[0].NodeSelector[gke.TopologyLabel] = "2x2x4"
			return r
		}(), domains: func() []Domain { return fleet("g1:2") }, why: "none of the cluster's 2 domains suits it: it needs 2x2x4 pools (2 hosts each) whose nodes all match the nodeSelector (cloud.google.com/gke-tpu-topology=2x2x4)"},
		{name: "a selected label must exist, even with an empty value", req: func() Request {
			r := slices("a", 1, false)
			r.Jobs[0].NodeSelector["team"] = ""
			return r
		}(), domains: func() []Domain { return fleet("g1:2") }, why: "none of the cluster's 2 domains suits it"},
		{name: "nothing suits, in one group too", req: func() Request {
			r := slices("a", 2, true)
			r.Jobs[0].NodeSelector[gke.TopologyLabel] = "4x4x4"
			return r
		}(), domains: func() []Domain { return fleet("g1:4") }, why: "none of the cluster's 4 domains suits it"},
		{name: "untolerated taint", req: func() Request {
			r := slices("a", 1, false)
			r.Jobs[0].RequestsTPU = false
			return r
		}(), domains: func() []Domain { return fleet("g1:1") }, why: "nothing fits until one exists"},
		{name: "explicit toleration", req: func() Request {
			r := slices("a", 1, false)
			r.Jobs[0].RequestsTPU = false
			r.Jobs[0].Tolerations = []corev1.Toleration{{Key: gke.TPUTaintKey, Operator: corev1.TolerationOpExists}}
			return r
		}(), domains: func() []Domain { return fleet("g1:1") }, want: 1},
		{name: "pods must fit", req: func() Request {
			r := slices("a", 1, false)
			r.Jobs[0].Pods = 3
			return r
		}(), domains: func() []Domain { return fleet("g1:2") }, why: "nothing fits until one exists"},
		{name: "CPU pods share a small domain's nodes", req: func() Request {
			r := slices("a", 3, false)
			for i := range r.Jobs {
				r.Jobs[i].Pods, r.Jobs[i].RequestsTPU, r.Jobs[i].NodeSelector = 3, false, nil
			}
			return r
		}(), domains: func() []Domain {
			var out []Domain
			for i := range 3 {
				v := fmt.Sprintf("cpu-%d", i)
				out = append(out, Domain{Value: v, Nodes: []Node{{Name: v + "-0", Healthy: true, Labels: nodelabels.Of(v+"-0", map[string]string{pool: v})}}})
			}
			return out
		}, want: 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Assign(c.req, c.domains())
			if c.want == 0 {
				if got.Domains != nil || !strings.Contains(got.Why, c.why) {
					t.Fatalf("Assign = %v, %q; want no fit with %q", got.Domains, got.Why, c.why)
				}
				return
			}
			if len(got.Domains) != c.want {
				t.Fatalf("Assign = %v (%s), want %d domains", got.Domains, got.Why, c.want)
			}
			seen := map[string]bool{}
			for job, d := range got.Domains {
				if seen[d] {
					t.Errorf("domain %s given twice", d)
				}
				seen[d] = true
				if c.group != "" && !strings.HasPrefix(d, c.group+"-") {
					t.Errorf("job %s got %s outside group %s", job, d, c.group)
				}
			}
		})
	}
}

func TestAssignKeepsPreviousDomains(t *testing.T) {
	req := slices("a", 2, true)
	req.Jobs[0].Previous, req.Jobs[1].Previous = "g1-np-3", "g1-np-2"
	got := Assign(req, fleet("g1:4"))
	if got.Domains["a-slice-0"] != "g1-np-3" || got.Domains["a-slice-1"] != "g1-np-2" {
		t.Fatalf("restart moved the slices: %v", got.Domains)
	}
	// A previous domain that went bad is replaced by a healthy one of the group.
	d := fleet("g1:4")
	d[3].Nodes[0].Healthy = false
	got = Assign(req, d)
	if got.Domains["a-slice-0"] == "g1-np-3" || got.Domains["a-slice-1"] != "g1-np-2" || len(got.Domains) != 2 {
		t.Fatalf("unhealthy previous domain kept or healthy one moved: %v", got.Domains)
	}
}

// A Job keeps its previous domain when best fit would now pick another
// group: a second look at a JobSet whose Job was just created (the cache
// not showing it yet) must not move the Job's reservation elsewhere.
func TestAssignKeepsPreviousGroup(t *testing.T) {
	req := slices("a", 1, true)
	req.Jobs[0].Previous = "g2-np-0"
	got := Assign(req, fleet("g1:2,g2:2"))
	if got.Domains["a-slice-0"] != "g2-np-0" {
		t.Fatalf("the Job's fit previous domain g2-np-0 was given up: %v", got.Domains)
	}
	// Gone bad, it is replaced as best fit says, in any group.
	d := fleet("g1:1,g2:2")
	d[1].Nodes[0].Healthy = false
	if got := Assign(req, d); got.Domains["a-slice-0"] != "g1-np-0" {
		t.Fatalf("unhealthy previous domain: got %v, want the best fit g1-np-0", got.Domains)
	}
}

// Property: whatever the fleet and holders, an assignment never reuses a
// domain, never uses a held or unhealthy one, and with SameGroup never
// spans groups.
func TestAssignInvariants(t *testing.T) {
	for seed := 0; seed < 200; seed++ {
		d := fleet(fmt.Sprintf("g1:%d,g2:%d,g3:%d", seed%5, (seed/5)%4, (seed/20)%3+1))
		for i := range d {
			switch (seed + i*7) % 5 {
			case 0:
				d[i].Holder = "other"
			case 1:
				d[i].Nodes[0].Healthy = false
			}
		}
		n := seed%4 + 1
		got := Assign(slices("me", n, seed%2 == 0), d)
		if got.Domains == nil {
			continue
		}
		byValue := map[string]Domain{}
		for _, x := range d {
			byValue[x.Value] = x
		}
		seen, groups := map[string]bool{}, map[string]bool{}
		for _, v := range got.Domains {
			x := byValue[v]
			if seen[v] || x.Holder != "" || !x.Healthy() {
				t.Fatalf("seed %d: bad domain %s (%+v)", seed, v, x)
			}
			seen[v], groups[x.Group] = true, true
		}
		if len(got.Domains) != n || seed%2 == 0 && len(groups) != 1 {
			t.Fatalf("seed %d: %v", seed, got.Domains)
		}
	}
}

// A Job with no previous domain goes to a domain nothing runs on before one
// where the JobSet's own pods of a previous attempt still stop (a restart
// whose failed Job lost its pin); with no other choice it goes there.
func TestAssignPrefersEmptyDomains(t *testing.T) {
	d := fleet("g1:3")
	d[0].Holder = "a" // a's pods of the previous attempt, still stopping
	got := Assign(slices("a", 2, true), d)
	if got.Domains["a-slice-0"] != "g1-np-1" || got.Domains["a-slice-1"] != "g1-np-2" {
		t.Fatalf("placed on a domain still busy while empty ones were free: %v", got.Domains)
	}
	got = Assign(slices("a", 3, true), d)
	if len(got.Domains) != 3 {
		t.Fatalf("the busy domain is not used when needed: %v (%s)", got.Domains, got.Why)
	}
}
