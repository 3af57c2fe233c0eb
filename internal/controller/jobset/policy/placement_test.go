package policy

import (
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/nodelabels"
	"github.com/multislice/multislice/internal/placement"
	"github.com/multislice/multislice/internal/testobj"
)

// pools are free, healthy domains of two hosts each.
func pools(names ...string) []placement.Domain {
	var out []placement.Domain
	for _, n := range names {
		d := placement.Domain{Value: n, ExpectedHosts: 2}
		for _, h := range []string{"-0", "-1"} {
			d.Nodes = append(d.Nodes, placement.Node{Name: n + h, Healthy: true, Labels: nodelabels.Of(n+h, map[string]string{gke.NodePoolLabel: n})})
		}
		out = append(out, d)
	}
	return out
}

// TestPlaceIsAStageOfDecide: Decide itself pins the Jobs it creates, or
// holds them all back with the condition and the requeue, and says what
// placement's memory must change.
func TestPlaceIsAStageOfDecide(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	js := testobj.NewJobSet("ns", "train").ReplicatedJob("slice", 2, 2).
		Edit(func(js *api.JobSet) {
			js.Annotations = map[string]string{api.ExclusiveKey: gke.NodePoolLabel}
			js.UID, js.CreationTimestamp = "u", metav1.NewTime(now)
		}).Obj()
	cases := []struct {
		name      string
		snapshot  placement.Snapshot
		pins      map[string]string
		wantPins  map[string]string // Job -> pool; nil: it waits
		wantWhy   string
		noPlacing bool
	}{
		{name: "free pools: every Job pinned at once",
			snapshot: placement.Snapshot{Domains: pools("np-0", "np-1", "np-2")},
			wantPins: map[string]string{"train-slice-0": "np-0", "train-slice-1": "np-1"}},
		{name: "a Job recreated comes back to its pool",
			snapshot: placement.Snapshot{Domains: pools("np-0", "np-1", "np-2")},
			pins:     map[string]string{"train-slice-0": "np-2"},
			wantPins: map[string]string{"train-slice-0": "np-2", "train-slice-1": "np-0"}},
		{name: "another's reservation is not free",
			snapshot: placement.Snapshot{Domains: pools("np-0", "np-1", "np-2"), Held: map[string]map[string]string{"ns/other": {"other-slice-0": "np-0"}}},
			wantPins: map[string]string{"train-slice-0": "np-1", "train-slice-1": "np-2"}},
		{name: "too few free pools: all wait",
			snapshot: func() placement.Snapshot {
				d := pools("np-0", "np-1")
				d[1].Holder = "ns/other"
				return placement.Snapshot{Domains: d}
			}(),
			wantWhy: "needs 2 free pools (2 hosts each); fewer are free now"},
		{name: "an older JobSet waiting for the same pools goes first",
			snapshot: placement.Snapshot{Domains: pools("np-0", "np-1"), Waiting: []placement.Waiter{{JobSet: "ns/old", Key: gke.NodePoolLabel,
				Created: now.Add(-time.Hour), Request: placement.Request{JobSet: "ns/old", Key: gke.NodePoolLabel,
					Jobs: []placement.JobRequest{{Name: "old-slice-0", Pods: 2}, {Name: "old-slice-1", Pods: 2}}}}}},
			wantWhy: "waiting behind ns/old"},
		{name: "no placement observed: the scheduler places", noPlacing: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := Observed{JobSet: js, Now: now}
			if !tc.noPlacing {
				o.Placement = &Placement{Keys: map[string]KeyPlacement{gke.NodePoolLabel: {Snapshot: tc.snapshot, Pins: tc.pins}}}
			}
			p := Decide(o)
			cond := meta.FindStatusCondition(p.Status.Conditions, string(TopologyAssigned))
			if tc.noPlacing {
				if cond != nil || p.HoldDomains != nil || p.WaitForDomains != nil || len(p.Create) != 2 {
					t.Fatalf("placed without a placement: condition %v, hold %v, wait %v, create %d", cond, p.HoldDomains, p.WaitForDomains, len(p.Create))
				}
				return
			}
			if tc.wantPins == nil {
				if len(p.Create) != 0 || p.WaitForDomains == nil || p.HoldDomains != nil || p.RequeueAfter != waitingRequeue {
					t.Fatalf("create %d, wait %v, hold %v, requeue %v; want nothing created, waiting, requeue %v",
						len(p.Create), p.WaitForDomains, p.HoldDomains, p.RequeueAfter, waitingRequeue)
				}
				if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != api.InsufficientCapacityReason || !strings.Contains(cond.Message, tc.wantWhy) {
					t.Fatalf("condition %+v, want False %s saying %q", cond, api.InsufficientCapacityReason, tc.wantWhy)
				}
				if !p.StatusChanged || !cond.LastTransitionTime.Time.Equal(now) {
					t.Fatalf("status changed %v, condition at %v: want written, at the observed time", p.StatusChanged, cond.LastTransitionTime)
				}
				return
			}
			got := map[string]string{}
			for _, j := range p.Create {
				got[j.Name] = j.Spec.Template.Spec.NodeSelector[gke.NodePoolLabel]
				if j.Annotations[api.AssignedDomainAnnotation] != got[j.Name] {
					t.Errorf("%s: annotation %q, selector %q", j.Name, j.Annotations[api.AssignedDomainAnnotation], got[j.Name])
				}
			}
			if !equalMaps(got, tc.wantPins) || !equalMaps(p.HoldDomains[gke.NodePoolLabel], tc.wantPins) || len(p.HoldDomains) != 1 {
				t.Fatalf("pinned %v, hold %v; want %v", got, p.HoldDomains, tc.wantPins)
			}
			if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != api.DomainsAssignedReason || !p.StatusChanged {
				t.Fatalf("condition %+v, changed %v; want True %s written", cond, p.StatusChanged, api.DomainsAssignedReason)
			}
		})
	}
}

// TestReleaseWhenSuspendedOrFinished: a JobSet that stops running lets
// its domains go, in the Plan.
func TestReleaseWhenSuspendedOrFinished(t *testing.T) {
	now := time.Now()
	suspended := testobj.NewJobSet("ns", "a").ReplicatedJob("slice", 1, 1).Suspend(true).Obj()
	done := testobj.NewJobSet("ns", "b").ReplicatedJob("slice", 1, 1).Obj()
	done.Status.Conditions = []metav1.Condition{{Type: string(api.JobSetCompleted), Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(now)}}
	running := testobj.NewJobSet("ns", "c").ReplicatedJob("slice", 1, 1).Obj()
	for _, tc := range []struct {
		js   *api.JobSet
		want bool
	}{{suspended, true}, {done, true}, {running, false}} {
		if got := Decide(Observed{JobSet: tc.js, Now: now, Jobs: []*batchv1.Job{}}).ReleaseDomains; got != tc.want {
			t.Errorf("%s: release %v, want %v", tc.js.Name, got, tc.want)
		}
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestStartingWritesAreHeld: a JobSet's placement and the counts of its
// starting Jobs are written together once every Job is ready, at most
// startingInterval after the Jobs were created or last written (a status
// that said the JobSet waits: placedInterval); other news is written at once.
func TestStartingWritesAreHeld(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	placed := metav1.Condition{Type: string(TopologyAssigned), Status: metav1.ConditionTrue, Reason: api.DomainsAssignedReason}
	waiting := metav1.Condition{Type: string(TopologyAssigned), Status: metav1.ConditionFalse, Reason: api.InsufficientCapacityReason, Message: "needs 1 free pool"}
	swapped := metav1.Condition{Type: string(TopologyAssigned), Status: metav1.ConditionTrue, Reason: api.HotSwapReason}
	counts := func(active, ready int32) []api.ReplicatedJobStatus {
		return []api.ReplicatedJobStatus{{Name: "slice", Active: active, Ready: ready}}
	}
	cases := []struct {
		name      string
		old, new  []metav1.Condition
		oldCounts []api.ReplicatedJobStatus
		newCounts []api.ReplicatedJobStatus
		creates   bool          // the plan creates the Jobs now
		jobsAge   time.Duration // else the Jobs were created this long ago
		sinceLast time.Duration // the last write (0: none since the manager started)
		suspended bool
		// requeue: when the held write comes back (0: written now).
		requeue time.Duration
	}{
		{name: "suspended (Kueue waits for its counts to fall): the counts interval", old: []metav1.Condition{placed}, new: []metav1.Condition{placed},
			oldCounts: counts(0, 0), newCounts: counts(1, 0), jobsAge: 40 * time.Second, sinceLast: time.Second / 2, suspended: true, requeue: time.Second / 2},
		{name: "placed as the Jobs are created: held", new: []metav1.Condition{placed}, newCounts: counts(0, 0), creates: true, requeue: startingInterval},
		{name: "placed, pods starting 2 s in: held", new: []metav1.Condition{placed}, newCounts: counts(1, 0), jobsAge: 2 * time.Second, requeue: 28 * time.Second},
		{name: "placed and ready: the one write", new: []metav1.Condition{placed}, newCounts: counts(1, 1), jobsAge: 2 * time.Second},
		{name: "placed, still starting after the interval: written", new: []metav1.Condition{placed}, newCounts: counts(1, 0), jobsAge: 31 * time.Second},
		{name: "placed after a written wait, 2 s after that write: held less", old: []metav1.Condition{waiting}, new: []metav1.Condition{placed},
			newCounts: counts(0, 0), creates: true, sinceLast: 2 * time.Second, requeue: placedInterval - 2*time.Second},
		{name: "placed after a written wait, 6 s after that write: written", old: []metav1.Condition{waiting}, new: []metav1.Condition{placed},
			newCounts: counts(1, 0), jobsAge: time.Second, sinceLast: 6 * time.Second},
		{name: "counts of starting Jobs, 2 s after the last write: held for ready", old: []metav1.Condition{placed}, new: []metav1.Condition{placed},
			oldCounts: counts(0, 0), newCounts: counts(1, 0), jobsAge: 8 * time.Second, sinceLast: 2 * time.Second, requeue: startingInterval - 2*time.Second},
		{name: "counts of starting Jobs, 31 s after the last write: written", old: []metav1.Condition{placed}, new: []metav1.Condition{placed},
			oldCounts: counts(0, 0), newCounts: counts(1, 0), jobsAge: 40 * time.Second, sinceLast: 31 * time.Second},
		{name: "counts reaching ready, 0.5 s after the last write: the counts interval", old: []metav1.Condition{placed}, new: []metav1.Condition{placed},
			oldCounts: counts(1, 0), newCounts: counts(1, 1), jobsAge: 8 * time.Second, sinceLast: time.Second / 2, requeue: time.Second / 2},
		{name: "counts falling (pods going): the counts interval", old: []metav1.Condition{placed}, new: []metav1.Condition{placed},
			oldCounts: counts(1, 1), newCounts: counts(0, 0), jobsAge: 40 * time.Second, sinceLast: time.Second / 2, requeue: time.Second / 2},
		{name: "a Job's restart counter (RestartJob): at once", old: []metav1.Condition{placed}, new: []metav1.Condition{placed},
			oldCounts: counts(1, 0), newCounts: []api.ReplicatedJobStatus{{Name: "slice", Active: 1, JobRestarts: []int32{1}}}, jobsAge: 2 * time.Second, sinceLast: time.Second / 2},
		{name: "waiting: at once", new: []metav1.Condition{waiting}, creates: true},
		{name: "hot-swapped: at once", new: []metav1.Condition{swapped}, newCounts: counts(0, 0), creates: true},
		{name: "no Jobs and no last write: at once", new: []metav1.Condition{placed}, newCounts: counts(0, 0)},
	}
	for _, tc := range cases {
		js := testobj.NewJobSet("ns", "q").ReplicatedJob("slice", 1, 1).Obj()
		js.Status.Conditions, js.Status.ReplicatedJobsStatus = tc.old, tc.oldCounts
		js.Spec.Suspend = ptr.To(tc.suspended)
		p := Plan{StatusChanged: true, Status: *js.Status.DeepCopy()}
		p.Status.Conditions, p.Status.ReplicatedJobsStatus = tc.new, tc.newCounts
		o := Observed{JobSet: js, Now: now, CountsInterval: time.Second}
		if tc.sinceLast > 0 {
			o.LastStatusWrite = now.Add(-tc.sinceLast)
		}
		if tc.creates {
			p.Create = []*batchv1.Job{{}}
		} else if tc.jobsAge > 0 {
			o.Jobs = []*batchv1.Job{{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(now.Add(-tc.jobsAge))}}}
		}
		batchCounts(o, &p)
		if p.StatusChanged != (tc.requeue == 0) || p.RequeueAfter != tc.requeue {
			t.Errorf("%s: written %v, requeue %v; want requeue %v (0: written now)", tc.name, p.StatusChanged, p.RequeueAfter, tc.requeue)
		}
	}
}

// TestInPlaceProgressWritesAreSpaced: an in-place restart's progress is
// written at most every inPlaceProgressInterval; its end at once.
func TestInPlaceProgressWritesAreSpaced(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	waiting := func(msg string) metav1.Condition {
		return metav1.Condition{Type: string(api.JobSetInPlaceRestarting), Status: metav1.ConditionTrue, Reason: api.WaitingForPodsReason, Message: msg}
	}
	done := metav1.Condition{Type: string(api.JobSetInPlaceRestarting), Status: metav1.ConditionFalse, Reason: api.AllPodsRestartedReason}
	cases := []struct {
		name      string
		timeout   time.Duration
		old, new  metav1.Condition
		sinceLast time.Duration
		// requeue: when the postponed write comes back (0: written now).
		requeue time.Duration
	}{
		{"progress, 2 s after the last write", 0, waiting("512 of 1024"), waiting("600 of 1024"), 2 * time.Second, 3 * time.Second},
		{"progress, 6 s after", 0, waiting("512 of 1024"), waiting("600 of 1024"), 6 * time.Second, 0},
		{"a short agent timeout spaces less", 8 * time.Second, waiting("512 of 1024"), waiting("600 of 1024"), time.Second, time.Second},
		{"all pods in: at once", 0, waiting("1023 of 1024"), done, time.Second, 0},
	}
	for _, tc := range cases {
		js := testobj.NewJobSet("ns", "r").ReplicatedJob("slice", 1, 1).Obj()
		js.Status.Conditions = []metav1.Condition{tc.old}
		p := Plan{StatusChanged: true, Status: *js.Status.DeepCopy()}
		p.Status.Conditions = []metav1.Condition{tc.new}
		batchCounts(Observed{JobSet: js, Now: now, CountsInterval: time.Second, AgentTimeout: tc.timeout, LastStatusWrite: now.Add(-tc.sinceLast)}, &p)
		if p.StatusChanged != (tc.requeue == 0) || p.RequeueAfter != tc.requeue {
			t.Errorf("%s: written %v, requeue %v; want requeue %v", tc.name, p.StatusChanged, p.RequeueAfter, tc.requeue)
		}
	}
}

// TestPlacementKeysPerReplicatedJob: each replicated job is placed by its
// own key, the template's annotation over the JobSet's, as upstream.
func TestPlacementKeysPerReplicatedJob(t *testing.T) {
	const host = "kubernetes.io/hostname"
	annotate := func(m map[string]string) func(*api.ReplicatedJob) {
		return func(rj *api.ReplicatedJob) { rj.Template.Annotations = m }
	}
	none := annotate(nil)
	cases := []struct {
		name     string
		jobSet   map[string]string
		head     func(*api.ReplicatedJob)
		worker   func(*api.ReplicatedJob)
		wantKeys []string
		want     map[string]string // replicated job -> key its Jobs carry
	}{
		{"JobSet level: every replicated job", map[string]string{api.ExclusiveKey: gke.NodePoolLabel}, none, none,
			[]string{gke.NodePoolLabel}, map[string]string{"head": gke.NodePoolLabel, "worker": gke.NodePoolLabel}},
		{"Job level: only the one that asks", nil, none, annotate(map[string]string{api.ExclusiveKey: gke.NodePoolLabel}),
			[]string{gke.NodePoolLabel}, map[string]string{"head": "", "worker": gke.NodePoolLabel}},
		{"Pathways: each its own key", nil, annotate(map[string]string{api.ExclusiveKey: host}), annotate(map[string]string{api.ExclusiveKey: gke.NodePoolLabel}),
			[]string{gke.NodePoolLabel, host}, map[string]string{"head": host, "worker": gke.NodePoolLabel}},
		{"mixed: the template wins over the JobSet", map[string]string{api.ExclusiveKey: gke.NodePoolLabel}, annotate(map[string]string{api.ExclusiveKey: host}), none,
			[]string{gke.NodePoolLabel, host}, map[string]string{"head": host, "worker": gke.NodePoolLabel}},
		{"node-selector strategy: pre-labelled nodes, not ours", map[string]string{api.ExclusiveKey: gke.NodePoolLabel, api.NodeSelectorStrategyKey: "true"}, none, none,
			nil, map[string]string{"head": "", "worker": ""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			js := testobj.NewJobSet("ns", "p").ReplicatedJob("head", 1, 1).LastReplicatedJob(tc.head).
				ReplicatedJob("worker", 2, 2).LastReplicatedJob(tc.worker).
				Edit(func(js *api.JobSet) { js.Annotations = tc.jobSet }).Obj()
			if got := placementKeys(js); strings.Join(got, ",") != strings.Join(tc.wantKeys, ",") {
				t.Errorf("keys %v, want %v", got, tc.wantKeys)
			}
			p := Decide(Observed{JobSet: js, Now: time.Now()})
			for _, j := range p.Create {
				rj := j.Labels[api.ReplicatedJobNameKey]
				if got := placedKey(j.Annotations); got != tc.want[rj] {
					t.Errorf("%s placed by %q, want %q", j.Name, got, tc.want[rj])
				}
			}
		})
	}
}

// TestPlaceByEveryKey: a Pathways JobSet's head gets a host of the CPU
// pool and each worker Job its own TPU pool, in one decision; when the
// head finds no host, nothing is created and no pool is held.
func TestPlaceByEveryKey(t *testing.T) {
	const host = "kubernetes.io/hostname"
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	js := testobj.NewJobSet("ns", "pw").
		ReplicatedJob("pathways-head", 1, 1).LastReplicatedJob(func(rj *api.ReplicatedJob) {
		rj.Template.Annotations = map[string]string{api.ExclusiveKey: host}
		rj.Template.Spec.Template.Spec.NodeSelector = map[string]string{gke.NodePoolLabel: "cpu-np"}
	}).
		ReplicatedJob("worker", 2, 2).LastReplicatedJob(func(rj *api.ReplicatedJob) {
		rj.Template.Annotations = map[string]string{api.ExclusiveKey: gke.NodePoolLabel}
	}).Edit(func(js *api.JobSet) { js.UID, js.CreationTimestamp = "u", metav1.NewTime(now) }).Obj()
	hosts := func(names ...string) []placement.Domain {
		var out []placement.Domain
		for _, n := range names {
			out = append(out, placement.Domain{Value: n, Nodes: []placement.Node{{Name: n, Healthy: true,
				Labels: nodelabels.Of(n, map[string]string{host: n, gke.NodePoolLabel: "cpu-np"})}}})
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		cpuHosts  []placement.Domain
		wantHead  string
		wantWhyIn string
	}{
		{"both placed", hosts("cpu-np-0"), "cpu-np-0", ""},
		{"no host for the head: all wait", func() []placement.Domain { d := hosts("cpu-np-0"); d[0].Holder = "ns/other"; return d }(), "",
			"replicated job pathways-head (by kubernetes.io/hostname)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Observed{JobSet: js, Now: now, Placement: &Placement{Keys: map[string]KeyPlacement{
				host:              {Snapshot: placement.Snapshot{Domains: tc.cpuHosts}},
				gke.NodePoolLabel: {Snapshot: placement.Snapshot{Domains: pools("np-0", "np-1")}},
			}}}
			p := Decide(o)
			cond := meta.FindStatusCondition(p.Status.Conditions, string(TopologyAssigned))
			if tc.wantHead == "" {
				if len(p.Create) != 0 || p.HoldDomains != nil || p.WaitForDomains == nil || p.WaitForDomains.Key != host {
					t.Fatalf("create %d, hold %v, wait %+v: want nothing created or held, waiting for a host", len(p.Create), p.HoldDomains, p.WaitForDomains)
				}
				if cond == nil || !strings.Contains(cond.Message, tc.wantWhyIn) {
					t.Fatalf("condition %+v, want one saying %q", cond, tc.wantWhyIn)
				}
				return
			}
			got := map[string]string{}
			for _, j := range p.Create {
				key := placedKey(j.Annotations)
				got[j.Name] = key + "=" + j.Spec.Template.Spec.NodeSelector[key]
			}
			want := map[string]string{"pw-pathways-head-0": host + "=cpu-np-0",
				"pw-worker-0": gke.NodePoolLabel + "=np-0", "pw-worker-1": gke.NodePoolLabel + "=np-1"}
			if !equalMaps(got, want) {
				t.Fatalf("pinned %v, want %v", got, want)
			}
			if p.HoldDomains[host]["pw-pathways-head-0"] != "cpu-np-0" || len(p.HoldDomains[gke.NodePoolLabel]) != 2 {
				t.Fatalf("hold %v", p.HoldDomains)
			}
			if cond == nil || cond.Status != metav1.ConditionTrue {
				t.Fatalf("condition %+v", cond)
			}
		})
	}
}

// TestPlacedStage: a running JobSet whose status does not say where its
// Jobs are (that write was held, or lost with the manager) says it from
// the Jobs' pins; nothing else does.
func TestPlacedStage(t *testing.T) {
	exclusive := func(js *api.JobSet) { js.Annotations = map[string]string{api.ExclusiveKey: gke.NodePoolLabel} }
	js := jobSet(2, exclusive)
	pinned := func() []*batchv1.Job {
		jobs := childJobs(js)
		for i, j := range jobs {
			api.Pin(j, gke.NodePoolLabel, fmt.Sprintf("np-%d", i))
		}
		return jobs
	}
	partly := pinned()
	delete(partly[1].Annotations, api.AssignedDomainAnnotation)
	placed := jobSet(2, exclusive, func(js *api.JobSet) {
		js.Status.Conditions = []metav1.Condition{{Type: string(TopologyAssigned), Status: metav1.ConditionTrue, Reason: api.DomainsAssignedReason, Message: "as it was"}}
	})
	cases := []struct {
		name string
		o    Observed
		want string // the condition's message after ("": none)
	}{
		{"pinned, not said: said", Observed{JobSet: js, Jobs: pinned(), Now: now},
			"each child Job has its own cloud.google.com/gke-nodepool: js-w-0=np-0, js-w-1=np-1"},
		{"a Job not pinned: the placement stage's to say", Observed{JobSet: js, Jobs: partly, Now: now}, ""},
		{"said already: kept", Observed{JobSet: placed, Jobs: pinned(), Now: now}, "as it was"},
		{"no Jobs yet: the placement stage's", Observed{JobSet: js, Now: now}, ""},
		{"suspended: nothing", Observed{JobSet: jobSet(2, exclusive, func(js *api.JobSet) { js.Spec.Suspend = ptr.To(true) }), Jobs: suspendedJobs(pinned()), Now: now}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, stop := stageAfter(t, "placed", tc.o, nil)
			if stop {
				t.Error("stopped")
			}
			got := ""
			if c := meta.FindStatusCondition(d.p.Status.Conditions, string(TopologyAssigned)); c != nil {
				got = c.Message
			}
			if got != tc.want {
				t.Errorf("condition message %q, want %q", got, tc.want)
			}
		})
	}
}
