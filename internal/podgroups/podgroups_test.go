package podgroups

import (
	"fmt"
	"strings"
	"testing"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/testobj"
)

// jobSet: replicated jobs "driver" (1 x 1 pod) and "slice" (4 x 2 pods).
func jobSet(s *api.JobSetScheduling) *api.JobSet {
	js := testobj.NewJobSet("ns", "train").ReplicatedJob("driver", 1, 1).ReplicatedJob("slice", 4, 2).Obj()
	js.Spec.Scheduling = s
	return js
}

func gang(n int32) *api.SchedulingPolicy {
	return &api.SchedulingPolicy{Gang: &api.GangPolicy{MinCount: ptr.To(n)}}
}

// summary is a plan as "template:PodGroup-without-hash members minCount",
// one per group.
func summary(p Plan) []string {
	var out []string
	for _, g := range p.Groups {
		member := strings.Join(g.ReplicatedJobs, "+")
		if g.JobIndex >= 0 {
			member += fmt.Sprintf("/%d", g.JobIndex)
		}
		out = append(out, fmt.Sprintf("%s:%s %s %d", g.Template, g.Name[:len(g.Name)-11], member, g.MinCount))
	}
	return out
}

func TestCompile(t *testing.T) {
	for _, tc := range []struct {
		name      string
		s         *api.JobSetScheduling
		startup   func(*api.JobSet)
		want      []string // summary
		templates int
		err       string // part of the error, "" for none
	}{
		{name: "none", s: nil},
		{name: "whole JobSet, gang by default", s: &api.JobSetScheduling{}, want: []string{"train:train driver+slice 9"}, templates: 1},
		{name: "whole JobSet, basic", s: &api.JobSetScheduling{SchedulingPolicy: &api.SchedulingPolicy{Basic: &schedulingv1beta1.BasicSchedulingPolicy{}}}, want: []string{"train:train driver+slice 0"}, templates: 1},
		{name: "whole JobSet, explicit minCount", s: &api.JobSetScheduling{SchedulingPolicy: gang(5)}, want: []string{"train:train driver+slice 5"}, templates: 1},
		{name: "in order: a gang per replicated job", s: &api.JobSetScheduling{},
			startup: func(js *api.JobSet) { js.Spec.StartupPolicy = &api.StartupPolicy{StartupPolicyOrder: api.InOrder} },
			want:    []string{"driver:train-driver driver 1", "slice:train-slice slice 8"}, templates: 2},
		{name: "in order with a whole-JobSet minCount", s: &api.JobSetScheduling{SchedulingPolicy: gang(9)},
			startup: func(js *api.JobSet) { js.Spec.StartupPolicy = &api.StartupPolicy{StartupPolicyOrder: api.InOrder} },
			err:     "spec.scheduling.schedulingPolicy.gang.minCount"},
		{name: "per replicated job", s: &api.JobSetScheduling{ReplicatedJobs: []api.ReplicatedJobScheduling{
			{TargetReplicatedJobs: []string{"driver"}}, {TargetReplicatedJobs: []string{"slice"}, SchedulingPolicy: gang(6)}}},
			want: []string{"driver:train-driver driver 1", "slice:train-slice slice 6"}, templates: 2},
		{name: "grouped replicated jobs", s: &api.JobSetScheduling{ReplicatedJobs: []api.ReplicatedJobScheduling{
			{TargetReplicatedJobs: []string{"driver", "slice"}}}},
			want: []string{"driver-slice:train-driver-slice driver+slice 9"}, templates: 1},
		{name: "a group per slice: one template, a PodGroup per Job", s: &api.JobSetScheduling{ReplicatedJobs: []api.ReplicatedJobScheduling{
			{TargetReplicatedJobs: []string{"driver"}}, {TargetReplicatedJobs: []string{"slice"}, Job: &api.JobScheduling{}}}},
			want: []string{"driver:train-driver driver 1", "slice:train-slice-0 slice/0 2", "slice:train-slice-1 slice/1 2",
				"slice:train-slice-2 slice/2 2", "slice:train-slice-3 slice/3 2"}, templates: 2},
		{name: "both models", s: &api.JobSetScheduling{SchedulingPolicy: gang(9), ReplicatedJobs: []api.ReplicatedJobScheduling{{TargetReplicatedJobs: []string{"driver", "slice"}}}},
			err: "spec.scheduling.replicatedJobs: Forbidden"},
		{name: "a replicated job left out", s: &api.JobSetScheduling{ReplicatedJobs: []api.ReplicatedJobScheduling{{TargetReplicatedJobs: []string{"slice"}}}},
			err: `replicated job "driver" is in no entry`},
		{name: "targeted twice", s: &api.JobSetScheduling{ReplicatedJobs: []api.ReplicatedJobScheduling{
			{TargetReplicatedJobs: []string{"driver", "slice"}}, {TargetReplicatedJobs: []string{"slice"}}}},
			err: "spec.scheduling.replicatedJobs[1].targetReplicatedJobs[0]: Duplicate value"},
		{name: "unknown target", s: &api.JobSetScheduling{ReplicatedJobs: []api.ReplicatedJobScheduling{{TargetReplicatedJobs: []string{"driver", "slice", "nope"}}}},
			err: "spec.scheduling.replicatedJobs[0].targetReplicatedJobs[2]: Not found"},
		{name: "job with two targets", s: &api.JobSetScheduling{ReplicatedJobs: []api.ReplicatedJobScheduling{{TargetReplicatedJobs: []string{"driver", "slice"}, Job: &api.JobScheduling{}}}},
			err: "spec.scheduling.replicatedJobs[0].job"},
		{name: "minCount above the pods", s: &api.JobSetScheduling{ReplicatedJobs: []api.ReplicatedJobScheduling{
			{TargetReplicatedJobs: []string{"driver"}}, {TargetReplicatedJobs: []string{"slice"}, Job: &api.JobScheduling{SchedulingPolicy: gang(3)}}}},
			err: "spec.scheduling.replicatedJobs[1].job.schedulingPolicy.gang.minCount: Invalid value: 3: must be 1 to the group's 2 pods"},
		{name: "basic and gang", s: &api.JobSetScheduling{SchedulingPolicy: &api.SchedulingPolicy{Basic: &schedulingv1beta1.BasicSchedulingPolicy{}, Gang: &api.GangPolicy{}}},
			err: "choose one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := jobSet(tc.s)
			if tc.startup != nil {
				tc.startup(js)
			}
			plan, errs := Compile(js)
			if tc.err != "" {
				if !strings.Contains(errs.ToAggregate().Error(), tc.err) {
					t.Fatalf("errors %v, want one with %q", errs, tc.err)
				}
				return
			}
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			if got := summary(plan); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("groups\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if len(plan.Templates) != tc.templates {
				t.Errorf("%d templates, want %d", len(plan.Templates), tc.templates)
			}
		})
	}
}

// Names are stable, DNS labels, and another JobSet's differ.
func TestNames(t *testing.T) {
	s := &api.JobSetScheduling{ReplicatedJobs: []api.ReplicatedJobScheduling{
		{TargetReplicatedJobs: []string{"driver"}}, {TargetReplicatedJobs: []string{"slice"}, Job: &api.JobScheduling{}}}}
	a, _ := Compile(jobSet(s))
	b, _ := Compile(jobSet(s))
	other := jobSet(s)
	other.Namespace = "ns2"
	c, _ := Compile(other)
	if a.Workload != b.Workload || a.Groups[1].Name != b.Groups[1].Name {
		t.Errorf("names differ between two compilations: %s %s", a.Workload, b.Workload)
	}
	if a.Workload == c.Workload || a.Groups[1].Name == c.Groups[1].Name {
		t.Errorf("the same names in another namespace: %s", a.Workload)
	}
	long := jobSet(s)
	long.Name = strings.Repeat("x", 60)
	l, errs := Compile(long)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, g := range l.Groups {
		if len(g.Name) > 63 || strings.HasSuffix(g.Name[:len(g.Name)-11], "-") {
			t.Errorf("PodGroup name %q (%d characters)", g.Name, len(g.Name))
		}
	}
	if got := a.ForJob("slice", 2); got == nil || got.JobIndex != 2 {
		t.Errorf("ForJob(slice, 2) = %+v", got)
	}
	if got := a.ForJob("driver", 0); got == nil || got.Template != "driver" {
		t.Errorf("ForJob(driver, 0) = %+v", got)
	}
}
