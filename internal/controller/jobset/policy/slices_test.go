package policy

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/slicing"
	"github.com/multislice/multislice/internal/testobj"
)

// cubeRow is a block of n free cubes in a row along z, named c0, c1, ...
func cubeRow(n int) []slicing.Cube {
	out := make([]slicing.Cube, n)
	for i := range out {
		out[i] = slicing.Cube{ID: fmt.Sprintf("c%d", i), Block: "b", Pos: slicing.Pos{0, 0, i}, Free: true}
	}
	return out
}

// TestSlicesStage: a dynamic-slicing JobSet (xpk's super-slicing shape:
// two 4x4x8 slices) forms its Slices, waits for them Ready, then starts
// its Jobs pinned to them; a failed Slice is let go first; too few cubes
// and nothing is formed or started.
func TestSlicesStage(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	js := testobj.NewJobSet("ns", "train").ReplicatedJob("slice", 2, 32).
		Edit(func(js *api.JobSet) {
			js.UID, js.CreationTimestamp = "u", metav1.NewTime(now)
			js.Spec.ReplicatedJobs[0].Template.Spec.Template.Annotations = map[string]string{gke.SliceTopologyAnnotation: "4x4x8"}
		}).Obj()
	ready := func(job string, cubes ...string) SliceFact {
		return SliceFact{Name: slicing.Name(job, "u"), Partitions: cubes, Ready: true}
	}
	cases := []struct {
		name                   string
		slices                 *SliceObservation
		wantCreate, wantDelete int
		wantNeedsCubes         bool
		wantJobs               int // Jobs created
		wantReason             string
		wantWhy                string
	}{
		{name: "no cubes observed yet: ask for them", slices: &SliceObservation{}, wantNeedsCubes: true},
		{name: "cubes free: both Slices formed, the Jobs wait for them",
			slices: &SliceObservation{Cubes: cubeRow(4)}, wantCreate: 2, wantReason: SlicesFormingReason},
		{name: "too few cubes: nothing formed, nothing started",
			slices: &SliceObservation{Cubes: cubeRow(3)}, wantReason: api.InsufficientCapacityReason, wantWhy: "needs 2 adjacent free 4x4x4 cubes"},
		{name: "formed, one not Ready: wait",
			slices:     &SliceObservation{Mine: map[string]SliceFact{"train-slice-0": ready("train-slice-0", "c0", "c1"), "train-slice-1": {Name: "s1"}}},
			wantReason: SlicesFormingReason},
		{name: "all Ready: the Jobs start, pinned",
			slices:   &SliceObservation{Mine: map[string]SliceFact{"train-slice-0": ready("train-slice-0", "c0", "c1"), "train-slice-1": ready("train-slice-1", "c2", "c3")}},
			wantJobs: 2, wantReason: api.DomainsAssignedReason},
		{name: "a failed Slice is let go before any is formed again",
			slices:     &SliceObservation{Cubes: cubeRow(6), Mine: map[string]SliceFact{"train-slice-0": {Name: "s0", Failed: true}}},
			wantDelete: 1, wantReason: SlicesFormingReason},
		{name: "a failed Slice Kueue's check formed is left to the check: Kueue requeues the Workload",
			slices:     &SliceObservation{Cubes: cubeRow(6), Mine: map[string]SliceFact{"train-slice-0": {Name: "s0", Failed: true, ForKueue: true, Message: "host h1 NotReady"}, "train-slice-1": ready("train-slice-1", "c2", "c3")}},
			wantReason: SlicesFormingReason, wantWhy: "host h1 NotReady; Kueue requeues the Workload"},
		{name: "no slice observation: the gate is off, the scheduler places", wantJobs: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(Observed{JobSet: js, Now: now, Slices: tc.slices})
			if len(p.CreateSlices) != tc.wantCreate || len(p.DeleteSlices) != tc.wantDelete || p.NeedsCubes != tc.wantNeedsCubes {
				t.Fatalf("create %d, delete %v, needs cubes %v; want %d, %d, %v", len(p.CreateSlices), p.DeleteSlices, p.NeedsCubes, tc.wantCreate, tc.wantDelete, tc.wantNeedsCubes)
			}
			if tc.wantNeedsCubes {
				return // nothing else of it is final
			}
			if len(p.Create) != tc.wantJobs {
				t.Fatalf("created %d Jobs, want %d", len(p.Create), tc.wantJobs)
			}
			cond := meta.FindStatusCondition(p.Status.Conditions, string(TopologyAssigned))
			if tc.wantReason != "" && (cond == nil || cond.Reason != tc.wantReason || !strings.Contains(cond.Message, tc.wantWhy)) {
				t.Fatalf("condition %+v, want reason %s saying %q", cond, tc.wantReason, tc.wantWhy)
			}
			for _, s := range p.CreateSlices {
				if s.Spec.Topology != "4x4x8" || len(s.Spec.PartitionIDs) != 2 || s.Labels["slice.multislice.dev/jobset-uid"] != "u" {
					t.Errorf("slice %s: %+v, labels %v", s.Name, s.Spec, s.Labels)
				}
			}
			for _, j := range p.Create {
				if tc.slices == nil {
					continue
				}
				want := tc.slices.Mine[j.Name]
				expr := j.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0]
				if slicing.PinnedSlice(j) != want.Name || expr.Key != gke.PartitionCubeLabel || strings.Join(expr.Values, ",") != strings.Join(want.Partitions, ",") {
					t.Errorf("Job %s pinned to %q by %+v, want %s on %v", j.Name, slicing.PinnedSlice(j), expr, want.Name, want.Partitions)
				}
			}
		})
	}
}

// TestFinishedJobSetLetsItsSlicesGo: a JobSet that finished (or is
// suspended) holds no cube.
func TestFinishedJobSetLetsItsSlicesGo(t *testing.T) {
	js := testobj.NewJobSet("ns", "train").ReplicatedJob("slice", 1, 16).Suspend(true).Obj()
	p := Decide(Observed{JobSet: js, Now: time.Now(), Slices: &SliceObservation{Mine: map[string]SliceFact{"train-slice-0": {Name: "s0", Ready: true}}}})
	if len(p.DeleteSlices) != 1 || p.DeleteSlices[0] != "s0" {
		t.Fatalf("delete slices %v, want [s0]", p.DeleteSlices)
	}
}

// TestSuspendedByKueueKeepsTheCheckSlices: suspended (waiting for its
// admission), a JobSet lets go only the Slices it formed itself; those
// Kueue's admission check formed for it are the check's until then.
func TestSuspendedByKueueKeepsTheCheckSlices(t *testing.T) {
	js := testobj.NewJobSet("ns", "train").ReplicatedJob("slice", 2, 16).Suspend(true).Obj()
	p := Decide(Observed{JobSet: js, Now: time.Now(), Slices: &SliceObservation{Mine: map[string]SliceFact{
		"train-slice-0": {Name: "s0", Ready: true, ForKueue: true}, "train-slice-1": {Name: "s1", Ready: true}}}})
	if len(p.DeleteSlices) != 1 || p.DeleteSlices[0] != "s1" {
		t.Fatalf("delete slices %v, want [s1]", p.DeleteSlices)
	}
}

// TestSubSlicesStage: two 2x2x4 sub-slices are cut from one cube, and
// their Jobs are pinned to their quarters' hosts.
func TestSubSlicesStage(t *testing.T) {
	js := testobj.NewJobSet("ns", "small").ReplicatedJob("slice", 2, 4).
		Edit(func(js *api.JobSet) {
			js.UID = "u"
			js.Spec.ReplicatedJobs[0].Template.Spec.Template.Annotations = map[string]string{gke.SliceTopologyAnnotation: "2x2x4"}
		}).Obj()
	p := Decide(Observed{JobSet: js, Now: time.Now(), Slices: &SliceObservation{Cubes: cubeRow(2)}})
	if len(p.CreateSlices) != 2 {
		t.Fatalf("formed %d slices, want 2 (%+v)", len(p.CreateSlices), p.Status.Conditions)
	}
	mine := map[string]SliceFact{}
	quarters := map[string]bool{}
	for _, s := range p.CreateSlices {
		q := s.Annotations["slice.multislice.dev/quarters"]
		if len(s.Spec.PartitionIDs) != 1 || s.Spec.PartitionIDs[0] != "c0" || q == "" || quarters[q] {
			t.Errorf("slice %s: partitions %v, quarters %q (taken: %v)", s.Name, s.Spec.PartitionIDs, q, quarters)
		}
		quarters[q] = true
		mine[s.Labels["slice.multislice.dev/job-name"]] = SliceFact{Name: s.Name, Partitions: s.Spec.PartitionIDs, Quarters: slicing.ParseQuarters(q), Ready: true}
	}
	p = Decide(Observed{JobSet: js, Now: time.Now(), Slices: &SliceObservation{Mine: mine}})
	if len(p.Create) != 2 {
		t.Fatalf("created %d Jobs, want 2", len(p.Create))
	}
	for _, j := range p.Create {
		exprs := j.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions
		if len(exprs) != 2 || len(exprs[1].Values) != 4 {
			t.Errorf("Job %s pinned by %+v, want its cube and its quarter's 4 hosts", j.Name, exprs)
		}
	}
}
