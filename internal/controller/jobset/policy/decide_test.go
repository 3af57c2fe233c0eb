package policy

import (
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/features"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/placement"
	"github.com/multislice/multislice/internal/testobj"
)

// TestStageOrder states each ordering of the pipeline that matters.
func TestStageOrder(t *testing.T) {
	names := StageNames()
	at := func(name string) int {
		i := slices.Index(names, name)
		if i < 0 {
			t.Fatalf("no stage %q in %v", name, names)
		}
		return i
	}
	for _, o := range []struct{ before, after, why string }{
		{"children", "finished", "every later stage reads the sorted Jobs and the counts"},
		{"finished", "deadline", "a finished JobSet is never failed by its deadline"},
		{"deadline", "restart", "a deadline that ran out ends the JobSet before a restart renews it"},
		{"finished", "hot-swapped", "a finished JobSet gives up nothing: its pools are free already"},
		{"hot-swapped", "restart", "a victim's restart for the taker comes before its own failures are judged: its Jobs go either way, and it must not count"},
		{"restart", "success", "a Job that failed goes to the failure policy before success is judged"},
		{"pod creation", "jobs", "Jobs whose pods cannot be created let their domains go before more are created"},
		{"refused jobs", "jobs", "Jobs the API server refused are not created again before the retry"},
		{"suspend or resume", "slices", "a resumed JobSet's Jobs are held for their Slices like new ones"},
		{"slices", "placement", "Jobs held for their Slices are not placed (or reserved) by key meanwhile"},
		{"jobs", "suspend or resume", "resumes read which replicated jobs may start"},
		{"suspend or resume", "scheduling", "the groups hold the Jobs the plan creates and resumes (commit 36f424e)"},
		{"scheduling", "placement", "Jobs waiting for their groups are not placed"},
		{"suspend or resume", "placed", "Jobs that resume are placed again (the placement stage), not said placed by their old pins"},
	} {
		if at(o.before) >= at(o.after) {
			t.Errorf("%q must run before %q: %s", o.before, o.after, o.why)
		}
	}
	if names[len(names)-1] != "placement" {
		t.Errorf("stages %v: placement, which pins what the others decided, must be last", names)
	}
}

// stageAfter runs the stages before name on o (the plan so far), lets
// edit change that, and runs name: the plan after and whether it stopped.
func stageAfter(t *testing.T, name string, o Observed, edit func(*decision)) (*decision, bool) {
	t.Helper()
	d := newDecision(o)
	for _, s := range stages {
		if s.name == name {
			if edit != nil {
				edit(d)
			}
			return d, s.run(d)
		}
		if s.run(d) {
			t.Fatalf("stage %q stopped before %q ran", s.name, name)
		}
	}
	t.Fatalf("no stage %q", name)
	return nil, false
}

// TestStages: one table of (observation, plan so far) -> plan after for
// the stages other tests do not cover on their own.
func TestStages(t *testing.T) {
	running := jobSet(2)
	suspended := jobSet(2, func(js *api.JobSet) { js.Spec.Suspend = ptr.To(true) })
	empty := testobj.NewJobSet("ns", "empty").Obj()
	grown := jobSet(2, func(js *api.JobSet) {
		js.Spec.ReplicatedJobs[0].Template.Spec.Parallelism = ptr.To(int32(4))
		js.Spec.ReplicatedJobs[0].Template.Spec.Completions = ptr.To(int32(4))
	})
	cases := []struct {
		name, stage string
		o           Observed
		edit        func(*decision)
		stop        bool
		check       func(*decision) string // "" when the plan is right
	}{
		{name: "children: counts every replicated job", stage: "children",
			o: Observed{JobSet: running, Jobs: childJobs(running), Now: now},
			check: func(d *decision) string {
				if st := d.p.Status.ReplicatedJobsStatus; len(st) != 1 || st[0].Active != 2 {
					return "replicatedJobsStatus not counted"
				}
				return ""
			}},
		{name: "service: asked for when missing", stage: "service and claims",
			o: Observed{JobSet: running, Jobs: childJobs(running), Now: now},
			check: func(d *decision) string {
				if d.p.Service == nil {
					return "no Service"
				}
				return ""
			}},
		{name: "service: not asked for when there", stage: "service and claims",
			o: Observed{JobSet: running, Jobs: childJobs(running), Now: now, ServiceExists: true},
			check: func(d *decision) string {
				if d.p.Service != nil {
					return "Service asked for again"
				}
				return ""
			}},
		{name: "nothing to run: says so and stops", stage: "nothing to run", stop: true,
			o: Observed{JobSet: empty, Now: now},
			check: func(d *decision) string {
				if c := meta.FindStatusCondition(d.p.Status.Conditions, string(ChildJobsCreated)); c == nil || c.Reason != NoReplicatedJobsReason {
					return "no NoReplicatedJobs condition"
				}
				return ""
			}},
		{name: "jobs: the missing ones are created", stage: "jobs",
			o: Observed{JobSet: running, Jobs: childJobs(running)[:1], Now: now},
			check: func(d *decision) string {
				if got := names(d.p.Create); !slices.Equal(got, []string{"js-w-1"}) {
					return "create " + strings.Join(got, ",")
				}
				return ""
			}},
		{name: "suspend: running Jobs suspended, domains let go", stage: "suspend or resume",
			o: Observed{JobSet: suspended, Jobs: childJobs(running), Now: now},
			check: func(d *decision) string {
				if len(d.p.Suspend) != 2 || !d.p.ReleaseDomains {
					return "suspend " + strings.Join(names(d.p.Suspend), ",")
				}
				return ""
			}},
		{name: "resume: suspended Jobs of a running JobSet resume", stage: "suspend or resume",
			o: Observed{JobSet: running, Jobs: suspendedJobs(childJobs(running)), Now: now},
			check: func(d *decision) string {
				if len(d.p.Resume) != 2 || ptr.Deref(d.p.Resume[0].Spec.Suspend, true) {
					return "resume " + strings.Join(names(d.p.Resume), ",")
				}
				return ""
			}},
		{name: "elastic: a grown replicated job rescales its Jobs", stage: "elastic scale",
			o: Observed{JobSet: grown, Jobs: childJobs(running), Now: now, Gates: features.Gates{ElasticJobSet: true}},
			check: func(d *decision) string {
				if len(d.p.Scale) != 2 {
					return "scale " + strings.Join(names(d.p.Scale), ",")
				}
				return ""
			}},
		{name: "finished: the rest of its Jobs go, nothing else runs", stage: "finished", stop: true,
			o: Observed{JobSet: finishedJobSet(), Jobs: childJobs(running), Now: now},
			check: func(d *decision) string {
				if len(d.p.Delete) != 2 {
					return "delete " + strings.Join(names(d.p.Delete), ",")
				}
				return ""
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, stop := stageAfter(t, tc.stage, tc.o, tc.edit)
			if stop != tc.stop {
				t.Errorf("stop %v, want %v", stop, tc.stop)
			}
			if why := tc.check(d); why != "" {
				t.Error(why)
			}
		})
	}
}

func finishedJobSet() *api.JobSet {
	js := jobSet(2)
	js.Status.Conditions = []metav1.Condition{{Type: string(api.JobSetCompleted), Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(now)}}
	return js
}

func suspendedJobs(jobs []*batchv1.Job) []*batchv1.Job {
	for _, j := range jobs {
		j.Spec.Suspend = ptr.To(true)
		j.Status.Active = 0
	}
	return jobs
}

// TestRefusedStage: Jobs the API server refused are a fact the next
// decision observes: it says so, lets a placed JobSet's domains go and
// tries again with backoff; once every Job exists ChildJobsCreated is True
// again.
func TestRefusedStage(t *testing.T) {
	placed := metav1.Condition{Type: string(TopologyAssigned), Status: metav1.ConditionTrue, Reason: api.DomainsAssignedReason}
	refusedCond := metav1.Condition{Type: string(ChildJobsCreated), Status: metav1.ConditionFalse, Reason: JobCreationRefusedReason}
	refused := func(ago time.Duration, times int) *JobRefusal {
		return &JobRefusal{Message: `spec.template.spec.dnsPolicy: Unsupported value: "Bogus"`, At: now.Add(-ago), Times: times}
	}
	for _, tc := range []struct {
		name       string
		conditions []metav1.Condition
		jobs       int // Jobs that exist, of 2
		refusal    *JobRefusal
		// want: ChildJobsCreated's status after ("" none); topology:
		// TopologyAssigned's reason after ("" as before).
		want     metav1.ConditionStatus
		topology string
		release  bool
		create   int
		requeue  time.Duration
	}{
		{name: "no refusal: created, nothing said", create: 2},
		{name: "refused, not placed: said, nothing created until the retry", refusal: refused(0, 1),
			want: metav1.ConditionFalse, requeue: time.Second},
		{name: "refused, placed: domains let go", conditions: []metav1.Condition{placed}, refusal: refused(0, 1),
			want: metav1.ConditionFalse, topology: JobCreationRefusedReason, release: true, requeue: time.Second},
		{name: "the retry waits longer each time", refusal: refused(time.Second, 3),
			want: metav1.ConditionFalse, requeue: 3 * time.Second},
		{name: "retry due: created again, still said", refusal: refused(2*time.Second, 1),
			want: metav1.ConditionFalse, create: 2},
		{name: "every Job exists after a refusal: True again", conditions: []metav1.Condition{refusedCond}, jobs: 2,
			want: metav1.ConditionTrue},
		{name: "some Jobs still missing: still False", conditions: []metav1.Condition{refusedCond}, jobs: 1,
			want: metav1.ConditionFalse, create: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := jobSet(2)
			js.Status.Conditions = append([]metav1.Condition(nil), tc.conditions...)
			p := Decide(Observed{JobSet: js, Jobs: childJobs(js)[:tc.jobs], Now: now, ServiceExists: true, JobsRefused: tc.refusal})
			got := meta.FindStatusCondition(p.Status.Conditions, string(ChildJobsCreated))
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("ChildJobsCreated written: %+v", got)
			case tc.want != "" && (got == nil || got.Status != tc.want):
				t.Errorf("ChildJobsCreated = %+v, want %s", got, tc.want)
			case tc.refusal != nil && !strings.Contains(got.Message, "refuses the child Jobs: "+tc.refusal.Message):
				t.Errorf("message %q does not give the API server's reason", got.Message)
			}
			if topo := meta.FindStatusCondition(p.Status.Conditions, string(TopologyAssigned)); tc.topology != "" && (topo == nil || topo.Reason != tc.topology) {
				t.Errorf("TopologyAssigned = %+v, want %s", topo, tc.topology)
			}
			if p.ReleaseDomains != tc.release || len(p.Create) != tc.create || p.RequeueAfter != tc.requeue {
				t.Errorf("release %v, create %d, requeue %v; want %v, %d, %v", p.ReleaseDomains, len(p.Create), p.RequeueAfter, tc.release, tc.create, tc.requeue)
			}
		})
	}
}

// TestNeedsSnapshot: a decision that would place Jobs without a snapshot
// of the domains asks for one and places nothing; with it, it places; one
// that places nothing never asks.
func TestNeedsSnapshot(t *testing.T) {
	js := testobj.NewJobSet("ns", "train").ReplicatedJob("slice", 2, 2).
		Edit(func(js *api.JobSet) { js.Annotations = map[string]string{api.ExclusiveKey: gke.NodePoolLabel} }).Obj()
	first := Decide(Observed{JobSet: js, Now: now, Places: true})
	if !slices.Equal(first.NeedsSnapshot, []string{gke.NodePoolLabel}) || first.HoldDomains != nil {
		t.Fatalf("without a snapshot: needs %v, holds %v", first.NeedsSnapshot, first.HoldDomains)
	}
	snap := &Placement{Keys: map[string]KeyPlacement{gke.NodePoolLabel: {Snapshot: placement.Snapshot{Domains: pools("np-0", "np-1")}}}}
	second := Decide(Observed{JobSet: js, Now: now, Places: true, Placement: snap})
	if second.NeedsSnapshot != nil || len(second.HoldDomains[gke.NodePoolLabel]) != 2 {
		t.Errorf("with a snapshot: needs %v, holds %v", second.NeedsSnapshot, second.HoldDomains)
	}
	for _, j := range second.Create {
		if d := api.PinnedDomain(j); d == "" || j.Spec.Template.Spec.NodeSelector[gke.NodePoolLabel] != d {
			t.Errorf("%s: pinned to %q, selects %q", j.Name, d, j.Spec.Template.Spec.NodeSelector[gke.NodePoolLabel])
		}
	}
	if created := Decide(Observed{JobSet: js, Now: now, Places: true, Jobs: second.Create}); created.NeedsSnapshot != nil {
		t.Errorf("nothing to place, yet it asks for a snapshot of %v", created.NeedsSnapshot)
	}
	if off := Decide(Observed{JobSet: js, Now: now}); off.NeedsSnapshot != nil || len(off.Create) != 2 {
		t.Errorf("placement off: needs %v, creates %d", off.NeedsSnapshot, len(off.Create))
	}
}
