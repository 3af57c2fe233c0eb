package view

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
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
	maintenance := func(n *corev1.Node) { n.Labels[gke.ActiveMaintenanceLabel] = "ONGOING" }
	cordoned := func(n *corev1.Node) { n.Spec.Unschedulable = true }
	cpu := func(n *corev1.Node) {
		n.Labels = map[string]string{gke.NodePoolLabel: "default-pool"}
	}
	nodes := []corev1.Node{
		node("a-0", "np-a", true), node("a-1", "np-a", true), // held by js
		node("b-0", "np-b", true), node("b-1", "np-b", true), // spare
		node("c-0", "np-c", false), node("c-1", "np-c", true), // one NotReady
		node("d-0", "np-d", true, maintenance), node("d-1", "np-d", true, cordoned),
		node("e-0", "np-e", true), // one of two hosts missing
		node("cpu-0", "default-pool", true, cpu),
	}
	jobs := []batchv1.Job{*testobj.NewJob("ns", "js-slice-0").OfJobSet("js", "slice", 0).PinnedTo(gke.NodePoolLabel, "np-a").Obj()}
	groups := Fleet("", nodes, jobs, nil)
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
	js := testobj.NewJobSet("ns", "js").Obj()
	js.Status.Conditions = []metav1.Condition{{Type: "TopologyAssigned", Status: metav1.ConditionTrue, Reason: "DomainsAssigned", LastTransitionTime: metav1.NewTime(at(0).Time)}}
	entries := Timeline(js, []corev1.Event{
		ev(30, "Normal", "JobsReady"), // given out of order; placed: the condition
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

func TestSummarize(t *testing.T) {
	js := testobj.NewJobSet("ns", "js").ReplicatedJob("slice", 2, 2).FailurePolicy(4).Obj()
	js.Status.Restarts = 1
	job := func(name string, index, attempt int, domain string, deleting bool) batchv1.Job {
		b := testobj.NewJob("", name).OfJobSet("js", "slice", index).Attempt(attempt).PinnedTo(gke.NodePoolLabel, domain)
		if deleting {
			b.Deleting(time.Now())
		}
		return *b.Obj()
	}
	pod := func(job string, index, attempt int, node string, phase corev1.PodPhase) corev1.Pod {
		return *testobj.NewPod("", fmt.Sprintf("%s-%d-x", job, index)).OfJob(job, index).Attempt(attempt).On(node, phase).Obj()
	}
	var events []corev1.Event
	for s := range 10 {
		events = append(events, corev1.Event{Type: "Normal", Reason: fmt.Sprintf("R%d", s), Message: "m",
			EventTime: metav1.NewMicroTime(time.Date(2026, 12, 1, 0, 0, 9-s, 0, time.UTC))})
	}
	v := Summarize(js,
		[]batchv1.Job{job("js-slice-1", 1, 1, "np-b", false), job("js-slice-0", 0, 1, "np-a", false), job("js-slice-0", 0, 0, "np-c", true)},
		[]corev1.Pod{pod("js-slice-0", 1, 1, "a-1", corev1.PodRunning), pod("js-slice-0", 0, 1, "a-0", corev1.PodPending), pod("js-slice-1", 0, 1, "b-0", corev1.PodRunning)},
		events)

	var got []string
	for _, s := range v.Slices {
		line := fmt.Sprintf("%s#%d@%s attempt %d:", s.Job, s.Index, s.Domain, s.Attempt)
		for _, w := range s.Workers {
			line += fmt.Sprintf(" %d=%s/%s", w.Index, w.Node, w.Phase)
		}
		got = append(got, line)
	}
	want := []string{ // sorted by index, workers by completion index, the deleted Job left out
		"js-slice-0#0@np-a attempt 1: 0=a-0/Pending 1=a-1/Running",
		"js-slice-1#1@np-b attempt 1: 0=b-0/Running",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("slices\n got %q\nwant %q", got, want)
	}
	if v.State != "Running" || v.Restarts != 1 || v.MaxRestarts != 4 || v.Name != "js" {
		t.Errorf("header %+v", v)
	}
	// The newest 8 events, in time order (given newest first).
	if len(v.Events) != 8 || !strings.HasPrefix(v.Events[0], "00:00:02 Normal R7: m") || !strings.Contains(v.Events[7], "R0") {
		t.Errorf("events %q", v.Events)
	}
}

// TestSummarizeSliceIdentity: with two replicated jobs, a slice is its
// Job's global index (MEGASCALE_SLICE_ID, what `logs --slice` takes), in
// that order.
func TestSummarizeSliceIdentity(t *testing.T) {
	js := testobj.NewJobSet("ns", "js").ReplicatedJob("driver", 1, 1).ReplicatedJob("workers", 2, 1).Obj()
	job := func(rjob string, index, global int) batchv1.Job {
		return *testobj.NewJob("", fmt.Sprintf("js-%s-%d", rjob, index)).OfJobSet("js", rjob, index).GlobalIndex(global).Obj()
	}
	v := Summarize(js, []batchv1.Job{job("workers", 1, 2), job("workers", 0, 1), job("driver", 0, 0)}, nil, nil)
	var got []string
	for _, s := range v.Slices {
		got = append(got, fmt.Sprintf("%d=%s", s.Slice, s.Job))
	}
	if want := []string{"0=js-driver-0", "1=js-workers-0", "2=js-workers-1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("slices %q, want %q", got, want)
	}
}

// TestPathwaysHeadIsNotASlice: in a TPU JobSet, the Job whose pods request
// no TPU (Pathways' head) is shown apart from the slices.
func TestPathwaysHeadIsNotASlice(t *testing.T) {
	job := func(name, rjob, global string, tpu bool) batchv1.Job {
		j := *testobj.NewJob("", name).OfJobSet("pw", rjob, 0).Label(api.JobGlobalIndexKey, global).Obj()
		j.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c"}}
		if tpu {
			j.Spec.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"google.com/tpu": resource.MustParse("4")}
		}
		return j
	}
	js := &api.JobSet{ObjectMeta: metav1.ObjectMeta{Name: "pw"}}
	v := Summarize(js, []batchv1.Job{job("pw-pathways-head-0", "pathways-head", "0", false),
		job("pw-worker-0", "worker", "1", true), job("pw-worker-1", "worker", "2", true)}, nil, nil)
	if len(v.Slices) != 2 || v.Slices[0].Job != "pw-worker-0" || len(v.Others) != 1 || v.Others[0].Job != "pw-pathways-head-0" {
		t.Fatalf("slices %+v, others %+v", v.Slices, v.Others)
	}
}

func TestHotSwapOf(t *testing.T) {
	victim := &api.JobSet{}
	victim.Annotations = map[string]string{api.HotSwappedByAnnotation: "ns/high"}
	victim.Status.Conditions = []metav1.Condition{{Type: string(api.JobSetHotSwapped), Status: metav1.ConditionTrue}}
	taker := &api.JobSet{}
	taker.Status.Conditions = []metav1.Condition{{Type: string(api.JobSetTopologyAssigned), Status: metav1.ConditionTrue, Reason: api.HotSwapReason,
		Message: "each child Job has its own pool: a=np-1; no healthy free pool fitted, so hot-swap took the pools of lower-priority ns/low (priority 1): np-2 (this JobSet's priority 9)"}}
	back := victim.DeepCopy()
	back.Status.Conditions[0].Status = metav1.ConditionFalse
	for _, tc := range []struct {
		js   *api.JobSet
		want string
	}{
		{victim, "taken by ns/high"},
		{taker, "it took the pools of lower-priority ns/low (priority 1): np-2"},
		{back, ""},
		{&api.JobSet{}, ""},
	} {
		if got := HotSwapOf(tc.js); tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("HotSwapOf = %q, want %q", got, tc.want)
		}
	}
}

func TestAdmissionOf(t *testing.T) {
	cond := func(typ, status, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionStatus(status), Reason: reason, Message: msg}
	}
	for _, tc := range []struct {
		conds      []metav1.Condition
		state, why string
	}{
		{nil, "pending", ""},
		{[]metav1.Condition{cond("QuotaReserved", "False", "Pending", "couldn't assign flavors to pod set slice: insufficient quota for google.com/tpu")},
			"pending", "Pending: couldn't assign flavors to pod set slice: insufficient quota for google.com/tpu"},
		{[]metav1.Condition{cond("QuotaReserved", "True", "QuotaReserved", "")}, "quota reserved", "waiting for its admission checks"},
		{[]metav1.Condition{cond("QuotaReserved", "True", "", ""), cond("Admitted", "True", "Admitted", "")}, "admitted", ""},
		{[]metav1.Condition{cond("Admitted", "True", "", ""), cond("Evicted", "True", "PodsReadyTimeout", "Exceeded the PodsReady timeout")},
			"evicted", "PodsReadyTimeout: Exceeded the PodsReady timeout"},
	} {
		if got := AdmissionOf("w", "lq", tc.conds); got.State != tc.state || got.Why != tc.why {
			t.Errorf("AdmissionOf(%v) = %+v, want %s (%s)", tc.conds, got, tc.state, tc.why)
		}
	}
}
