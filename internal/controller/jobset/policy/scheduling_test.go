package policy

import (
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/features"
	"github.com/multislice/multislice/internal/podgroups"
)

// What Decide does with spec.scheduling: a running JobSet gets the
// Workload and every PodGroup it lacks, and its new Jobs' pods join their
// group; a suspended one has its objects deleted; one that cannot be
// compiled creates nothing and says why.
func TestDecideScheduling(t *testing.T) {
	perJob := func(js *api.JobSet) {
		js.Spec.Scheduling = &api.JobSetScheduling{ReplicatedJobs: []api.ReplicatedJobScheduling{
			{TargetReplicatedJobs: []string{"w"}, Job: &api.JobScheduling{}}}}
	}
	plan, _ := podgroups.Compile(jobSet(3, perJob))
	allGroups := map[string]bool{}
	for _, g := range plan.Groups {
		allGroups[g.Name] = true
	}
	for _, tc := range []struct {
		name              string
		js                *api.JobSet
		have              SchedulingObjects
		workload          bool
		podGroups, create int
		deleted           bool
		gone              []string // PodGroups deleted while running
		refused           string
	}{
		{name: "fresh", js: jobSet(3, perJob), workload: true, podGroups: 3, create: 3},
		{name: "one group gone", js: jobSet(3, perJob), have: SchedulingObjects{Workload: true, PodGroups: map[string]bool{plan.Groups[0].Name: true, plan.Groups[1].Name: true}},
			podGroups: 1, create: 3},
		{name: "all there", js: jobSet(3, perJob), have: SchedulingObjects{Workload: true, PodGroups: allGroups}, create: 3},
		{name: "a group of a Job no more still going: the others go on", js: jobSet(2, perJob), have: SchedulingObjects{Workload: true,
			PodGroups: map[string]bool{plan.Groups[0].Name: true, plan.Groups[1].Name: true}, Going: map[string]bool{plan.Groups[2].Name: true}}, create: 2},
		{name: "fewer Jobs (ElasticJobSet): the last one's group goes", js: jobSet(2, perJob), have: SchedulingObjects{Workload: true, PodGroups: allGroups},
			create: 2, gone: []string{plan.Groups[2].Name}},
		{name: "suspended with its objects", js: jobSet(3, perJob, func(js *api.JobSet) { js.Spec.Suspend = ptr.To(true) }),
			have: SchedulingObjects{Workload: true, PodGroups: allGroups}, deleted: true, create: 3},
		{name: "suspended with none", js: jobSet(3, perJob, func(js *api.JobSet) { js.Spec.Suspend = ptr.To(true) }), create: 3},
		{name: "resumed while the old groups go", js: jobSet(3, perJob), have: SchedulingObjects{Going: map[string]bool{plan.Groups[1].Name: true}},
			refused: "False WaitingForPodGroupsToGo: the Jobs wait for the PodGroups of before to go"},
		{name: "the old groups gone", js: jobSet(3, perJob, func(js *api.JobSet) {
			js.Status.Conditions = []metav1.Condition{{Type: string(ChildJobsCreated), Status: metav1.ConditionFalse, Reason: PodGroupsGoingReason}}
		}), workload: true, podGroups: 3, create: 3, refused: "True PodGroupsReady"},
		{name: "cannot be compiled", js: jobSet(3, func(js *api.JobSet) {
			js.Spec.Scheduling = &api.JobSetScheduling{ReplicatedJobs: []api.ReplicatedJobScheduling{{TargetReplicatedJobs: []string{"nope"}}}}
		}), refused: "False InvalidScheduling: spec.scheduling: [spec.scheduling.replicatedJobs[0].targetReplicatedJobs[0]: Not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			have := tc.have
			p := Decide(Observed{JobSet: tc.js, ServiceExists: true, Now: now, Scheduling: &have})
			if (p.Workload != nil) != tc.workload || len(p.PodGroups) != tc.podGroups || len(p.Create) != tc.create || (p.DeleteWorkload != "" && len(p.DeletePodGroups) == 3) != tc.deleted {
				t.Fatalf("workload %v, %d PodGroups, %d Jobs, delete %v", p.Workload != nil, len(p.PodGroups), len(p.Create), p.DeletePodGroups)
			}
			if !tc.deleted && !slices.Equal(p.DeletePodGroups, tc.gone) {
				t.Errorf("PodGroups deleted %v, want %v", p.DeletePodGroups, tc.gone)
			}
			if c := meta.FindStatusCondition(p.Status.Conditions, string(ChildJobsCreated)); tc.refused != "" &&
				(c == nil || !strings.HasPrefix(string(c.Status)+" "+c.Reason+": "+c.Message, tc.refused)) {
				t.Errorf("condition %+v, want %q", c, tc.refused)
			}
			for _, j := range p.Create {
				g := j.Spec.Template.Spec.SchedulingGroup
				if g == nil || !allGroups[*g.PodGroupName] || j.Annotations[podgroups.TemplateAnnotation] != "w" {
					t.Errorf("Job %s: schedulingGroup %v, annotations %v", j.Name, g, j.Annotations)
				}
			}
		})
	}
}

// TestDecideRegroupsOnResume: a suspended Job whose pods point at a group
// other than the one spec.scheduling gives it now is made again instead of
// resumed (a Job's pod template cannot change its group).
func TestDecideRegroupsOnResume(t *testing.T) {
	perJob := func(js *api.JobSet) {
		js.Spec.Scheduling = &api.JobSetScheduling{ReplicatedJobs: []api.ReplicatedJobScheduling{
			{TargetReplicatedJobs: []string{"w"}, Job: &api.JobScheduling{}}}}
	}
	whole := func(js *api.JobSet) { js.Spec.Scheduling = &api.JobSetScheduling{} }
	// suspendedJobs are js's Jobs as made while it was suspended.
	suspendedJobs := func(js *api.JobSet) []*batchv1.Job {
		plan, _ := podgroups.Compile(js)
		jobs := childJobs(js)
		for _, j := range jobs {
			j.Spec.Suspend, j.Status.Active = ptr.To(true), 0
			joinGroup(plan, j)
		}
		return jobs
	}
	userGroup := func(jobs []*batchv1.Job) []*batchv1.Job {
		for _, j := range jobs {
			j.Spec.Template.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("theirs")}
		}
		return jobs
	}
	for _, tc := range []struct {
		name            string
		js              *api.JobSet
		jobs            []*batchv1.Job
		resumed, remade int
		going           bool // a group of now is still going
	}{
		{name: "made in the groups of now", js: jobSet(2, perJob), jobs: suspendedJobs(jobSet(2, perJob)), resumed: 2},
		{name: "a group per Job, now one for the JobSet", js: jobSet(2, whole), jobs: suspendedJobs(jobSet(2, perJob)), remade: 2},
		{name: "spec.scheduling added", js: jobSet(2, perJob), jobs: suspendedJobs(jobSet(2)), remade: 2},
		{name: "spec.scheduling removed", js: jobSet(2), jobs: suspendedJobs(jobSet(2, perJob)), remade: 2},
		{name: "the user's own group, no spec.scheduling", js: jobSet(2), jobs: userGroup(suspendedJobs(jobSet(2))), resumed: 2},
		{name: "its groups of before still going: none resumes yet", js: jobSet(2, perJob), jobs: suspendedJobs(jobSet(2, perJob)),
			going: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var have *SchedulingObjects
			if tc.js.Spec.Scheduling != nil {
				have = &SchedulingObjects{Going: map[string]bool{}}
			}
			if tc.going {
				plan, _ := podgroups.Compile(tc.js)
				have.Going[plan.Groups[0].Name] = true
			}
			gates := features.Defaults()
			gates.WorkloadAwareScheduling = true
			p := Decide(Observed{JobSet: tc.js, Jobs: tc.jobs, ServiceExists: true, Now: now, Gates: gates, Scheduling: have})
			if len(p.Resume) != tc.resumed || len(p.Delete) != tc.remade {
				t.Errorf("resumed %v, deleted to be made again %v; want %d and %d", names(p.Resume), names(p.Delete), tc.resumed, tc.remade)
			}
		})
	}
}
