package view

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/multislice/multislice/internal/testobj"
)

func node(name, pool string, ready bool, edit ...func(*corev1.Node)) corev1.Node {
	edits := []func(*corev1.Node){testobj.TPUHost(pool, "2x2x2", "g1")}
	if !ready {
		edits = append(edits, testobj.NotReady)
	}
	return testobj.Node(name, append(edits, edit...)...)
}

func TestFleet(t *testing.T) {
	maintenance := func(n *corev1.Node) { n.Labels["cloud.google.com/active-node-maintenance"] = "ONGOING" }
	cordoned := func(n *corev1.Node) { n.Spec.Unschedulable = true }
	cpu := func(n *corev1.Node) {
		n.Labels = map[string]string{"cloud.google.com/gke-nodepool": "default-pool"}
	}
	nodes := []corev1.Node{
		node("a-0", "np-a", true), node("a-1", "np-a", true), // held by js
		node("b-0", "np-b", true), node("b-1", "np-b", true), // spare
		node("c-0", "np-c", false), node("c-1", "np-c", true), // one NotReady
		node("d-0", "np-d", true, maintenance), node("d-1", "np-d", true, cordoned),
		node("e-0", "np-e", true), // one of two hosts missing
		node("cpu-0", "default-pool", true, cpu),
	}
	jobs := []batchv1.Job{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "js-slice-0",
		Labels: map[string]string{"jobset.sigs.k8s.io/jobset-name": "js"}, Annotations: map[string]string{"multislice.dev/assigned-domain": "np-a"}}}}
	groups := Fleet(nodes, jobs, nil)
	if len(groups) != 2 || groups[0].Name != "g1" || groups[1].Name != "" {
		t.Fatalf("groups = %+v, want g1 then the ungrouped rest", groups)
	}
	want := map[string]struct {
		state, holder string
		hosts         int
	}{
		"np-a": {HostHeld, "ns/js", 2}, "np-b": {HostSpare, "", 2}, "np-c": {HostNotReady, "", 2},
		"np-d": {HostRepairing, "", 2}, "np-e": {HostMissing, "", 2},
	}
	for _, p := range groups[0].Pools {
		w := want[p.Name]
		if p.State != w.state || p.Holder != w.holder || len(p.Hosts) != w.hosts {
			t.Errorf("pool %s: state %s holder %q hosts %d, want %+v", p.Name, p.State, p.Holder, len(p.Hosts), w)
		}
	}
	if d := groups[0].Pools[3]; d.Hosts[0].State != HostMaintenance || d.Hosts[1].State != HostRepairing {
		t.Errorf("np-d hosts = %+v, want maintenance and repairing", d.Hosts)
	}
	if cpuPool := groups[1].Pools[0]; cpuPool.State != HostReady {
		t.Errorf("cpu pool = %+v, want ready", cpuPool)
	}
}

func TestTimeline(t *testing.T) {
	at := func(s int) metav1.MicroTime { return metav1.NewMicroTime(time.Date(2026, 12, 1, 0, 0, s, 0, time.UTC)) }
	ev := func(s int, typ, reason string) corev1.Event {
		return corev1.Event{Type: typ, Reason: reason, EventTime: at(s)}
	}
	entries := Timeline([]corev1.Event{
		ev(30, "Normal", "JobsReady"), // given out of order
		ev(0, "Normal", "DomainsAssigned"),
		ev(10, "Warning", "SliceUnhealthy"),
		ev(11, "Warning", "RestartJobSetFailurePolicyAction"),
		ev(40, "Warning", "JobCreationFailed"),
	})
	want := []struct {
		kind  string
		since time.Duration
	}{{EntryPlaced, 0}, {EntryFault, 0}, {EntryRestart, time.Second}, {EntryRecovered, 20 * time.Second}, {EntryWarning, 0}}
	if len(entries) != len(want) {
		t.Fatalf("entries = %+v", entries)
	}
	for i, w := range want {
		if entries[i].Kind != w.kind || entries[i].Since != w.since {
			t.Errorf("entry %d = %s +%s, want %s +%s", i, entries[i].Kind, entries[i].Since, w.kind, w.since)
		}
	}
}
