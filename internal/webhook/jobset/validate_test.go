package jobset

import (
	"math"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/features"
	"github.com/multislice/multislice/internal/testobj"
)

func elasticJobSet() *api.JobSet { return testobj.NewJobSet("ns", "js").ReplicatedJob("w", 2, 2).Obj() }

func TestValidateUpdateElastic(t *testing.T) {
	on := features.Gates{ElasticJobSet: true}
	scale := func(p, c, r int32) func(*api.JobSet) {
		return func(js *api.JobSet) {
			rj := &js.Spec.ReplicatedJobs[0]
			rj.Template.Spec.Parallelism, rj.Template.Spec.Completions, rj.Replicas = ptr.To(p), ptr.To(c), r
		}
	}
	for _, tc := range []struct {
		name  string
		gates features.Gates
		old   func(*api.JobSet)
		edit  func(*api.JobSet)
		want  string // "" = accepted
	}{
		{name: "scale pods and Jobs", gates: on, edit: scale(4, 4, 3)},
		{name: "gate off", edit: scale(4, 4, 2), want: "spec.replicatedJobs: Forbidden: field is immutable"},
		{name: "unequal", gates: on, edit: scale(4, 3, 2), want: "completions must be equal to parallelism for Elastic Indexed Jobs"},
		{name: "parallelism below 1", gates: on, edit: scale(0, 0, 2), want: "parallelism must be >= 1"},
		{name: "replicas below 1", gates: on, edit: scale(2, 2, 0), want: "replicas must be >= 1"},
		{name: "NonIndexed", gates: on, old: func(js *api.JobSet) {
			js.Spec.ReplicatedJobs[0].Template.Spec.CompletionMode = ptr.To(batchv1.NonIndexedCompletion)
		}, edit: scale(4, 4, 2), want: "field is immutable"},
		{name: "finished", gates: on, old: func(js *api.JobSet) {
			js.Status.Conditions = []metav1.Condition{{Type: string(api.JobSetCompleted), Status: metav1.ConditionTrue}}
		}, edit: scale(4, 4, 2), want: "cannot change once the JobSet has finished"},
		{name: "image stays immutable", gates: on, edit: func(js *api.JobSet) {
			js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].Image = "other"
		}, want: "field is immutable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := elasticJobSet()
			if tc.old != nil {
				tc.old(old)
			}
			js := old.DeepCopy()
			tc.edit(js)
			errs := ValidateUpdate(old, js, tc.gates)
			if got := errs.ToAggregate(); tc.want == "" && got != nil || tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)) {
				t.Fatalf("ValidateUpdate = %v, want %q", got, tc.want)
			}
		})
	}
}

// TestValidateGangResize: a running JobSet's resize is refused when its
// Workload or a PodGroup it has would have to follow (immutable in
// Kubernetes 1.37), and allowed when only groups come or go.
func TestValidateGangResize(t *testing.T) {
	on := features.Gates{ElasticJobSet: true, WorkloadAwareScheduling: true}
	wholeJobSet := func(minCount *int32) func(*api.JobSet) {
		return func(js *api.JobSet) {
			js.Spec.Scheduling = &api.JobSetScheduling{SchedulingPolicy: &api.SchedulingPolicy{Gang: &api.GangPolicy{MinCount: minCount}}}
		}
	}
	perJob := func(js *api.JobSet) {
		js.Spec.Scheduling = &api.JobSetScheduling{ReplicatedJobs: []api.ReplicatedJobScheduling{
			{TargetReplicatedJobs: []string{"w"}, Job: &api.JobScheduling{}}}}
	}
	scale := func(p, r int32) func(*api.JobSet) {
		return func(js *api.JobSet) {
			rj := &js.Spec.ReplicatedJobs[0]
			rj.Template.Spec.Parallelism, rj.Template.Spec.Completions, rj.Replicas = ptr.To(p), ptr.To(p), r
		}
	}
	suspended := func(js *api.JobSet) { js.Spec.Suspend = ptr.To(true) }
	const refused = "spec.replicatedJobs[0]: Forbidden: resizing it would change "
	for _, tc := range []struct {
		name  string
		gates features.Gates
		old   []func(*api.JobSet)
		edit  func(*api.JobSet)
		want  string // "" = accepted
	}{
		{name: "the whole JobSet's gang grows", gates: on, old: []func(*api.JobSet){wholeJobSet(nil)}, edit: scale(2, 3),
			want: refused + `the Workload's group template "js" and PodGroup `},
		{name: "its explicit minCount still met", gates: on, old: []func(*api.JobSet){wholeJobSet(ptr.To[int32](2))}, edit: scale(2, 3)},
		{name: "its explicit minCount no longer met", gates: on, old: []func(*api.JobSet){wholeJobSet(ptr.To[int32](4))}, edit: scale(1, 2),
			want: "minCount: Invalid value: 4: must be 1 to the group's 2 pods"},
		{name: "suspended: the groups are made anew", gates: on, old: []func(*api.JobSet){wholeJobSet(nil), suspended}, edit: scale(2, 3)},
		{name: "a group per Job: more Jobs", gates: on, old: []func(*api.JobSet){perJob}, edit: scale(2, 3)},
		{name: "a group per Job: fewer Jobs", gates: on, old: []func(*api.JobSet){perJob}, edit: scale(2, 1)},
		{name: "a group per Job: more pods in each", gates: on, old: []func(*api.JobSet){perJob}, edit: scale(4, 2),
			want: refused + "the Workload's group template "},
		{name: "a group per Job: as many pods, shaped otherwise", gates: on, old: []func(*api.JobSet){perJob}, edit: scale(1, 4),
			want: refused + "the Workload's group template "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := elasticJobSet()
			for _, f := range tc.old {
				f(old)
			}
			js := old.DeepCopy()
			tc.edit(js)
			errs := ValidateUpdate(old, js, tc.gates)
			if got := errs.ToAggregate(); tc.want == "" && got != nil || tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)) {
				t.Fatalf("ValidateUpdate = %v, want %q", got, tc.want)
			}
		})
	}
}

// budget gives the first replicated job a restart budget of n under a
// JobSet maxRestarts of max.
func budget(n, max int32) func(*api.JobSet) {
	return func(js *api.JobSet) {
		js.Spec.FailurePolicy = &api.FailurePolicy{MaxRestarts: max}
		js.Spec.ReplicatedJobs[0].FailurePolicy = &api.ReplicatedJobFailurePolicy{MaxRestarts: n}
	}
}

func TestValidateCreate(t *testing.T) {
	rjob := func(edit func(*api.ReplicatedJob)) func(*api.JobSet) {
		return func(js *api.JobSet) { edit(&js.Spec.ReplicatedJobs[0]) }
	}
	policy := func(rules ...api.FailurePolicyRule) func(*api.JobSet) {
		return func(js *api.JobSet) { js.Spec.FailurePolicy = &api.FailurePolicy{MaxRestarts: 3, Rules: rules} }
	}
	inPlace := func(js *api.JobSet) {
		js.Spec.FailurePolicy = &api.FailurePolicy{MaxRestarts: 3, RestartStrategy: api.InPlaceRestart}
		s := &js.Spec.ReplicatedJobs[0].Template.Spec
		s.BackoffLimit, s.PodReplacementPolicy = ptr.To(int32(math.MaxInt32)), ptr.To(batchv1.Failed)
	}
	for _, tc := range []struct {
		name  string
		gates features.Gates
		edit  func(*api.JobSet)
		want  string // "" valid, else a part of the error (the field path first)
	}{
		{"valid", features.Gates{}, func(*api.JobSet) {}, ""},
		{"no replicated jobs: accepted, as upstream", features.Gates{}, func(js *api.JobSet) { js.Spec.ReplicatedJobs = nil }, ""},
		{"unnamed", features.Gates{}, rjob(func(rj *api.ReplicatedJob) { rj.Name = "" }), "spec.replicatedJobs[0].name: Required value"},
		{"name not a DNS label", features.Gates{}, rjob(func(rj *api.ReplicatedJob) { rj.Name = "Work_ers" }), "spec.replicatedJobs[0].name"},
		{"child Job name too long", features.Gates{}, func(js *api.JobSet) { js.Name = strings.Repeat("a", 60) }, "shorten the JobSet or replicated job name"},
		{"replicas x parallelism overflows", features.Gates{}, rjob(func(rj *api.ReplicatedJob) { rj.Replicas = math.MaxInt32 }),
			"spec.replicatedJobs[0].replicas"},
		{"the first replicated job depends on another", features.Gates{}, rjob(func(rj *api.ReplicatedJob) {
			rj.DependsOn = []api.DependsOn{{Name: "x", Status: api.DependencyComplete}}
		}), "spec.replicatedJobs[0].dependsOn: Forbidden: the first replicated job cannot depend on another"},
		{"negative maxRestarts", features.Gates{}, func(js *api.JobSet) { js.Spec.FailurePolicy = &api.FailurePolicy{MaxRestarts: -1} }, "spec.failurePolicy.maxRestarts"},
		{"exclusive key", features.Gates{}, rjob(func(rj *api.ReplicatedJob) {
			rj.Template.Annotations = map[string]string{api.ExclusiveKey: "two words"}
		}), "spec.replicatedJobs[0].template.metadata.annotations[alpha.jobset.sigs.k8s.io/exclusive-topology]"},
		{"restart grace period not a number", features.Gates{}, func(js *api.JobSet) {
			js.Annotations = map[string]string{api.RestartGracePeriodAnnotation: "soon"}
		}, "metadata.annotations[" + api.RestartGracePeriodAnnotation + "]"},
		{"subdomain", features.Gates{}, func(js *api.JobSet) { js.Spec.Network = &api.Network{Subdomain: "Not_valid"} }, "spec.network.subdomain"},
		{"managedBy not a domain-prefixed path", features.Gates{}, func(js *api.JobSet) { js.Spec.ManagedBy = ptr.To("kueue") }, "spec.managedBy"},
		{"managedBy elsewhere", features.Gates{}, func(js *api.JobSet) { js.Spec.ManagedBy = ptr.To("kueue.x-k8s.io/multikueue") }, ""},
		{"success policy target unknown", features.Gates{}, func(js *api.JobSet) {
			js.Spec.SuccessPolicy = &api.SuccessPolicy{Operator: api.OperatorAll, TargetReplicatedJobs: []string{"ps"}}
		}, "spec.successPolicy.targetReplicatedJobs[0]: Invalid value: \"ps\": names no replicated job: use one of w"},
		{"rule name", features.Gates{}, policy(api.FailurePolicyRule{Name: "1st", Action: api.FailJobSet}), "spec.failurePolicy.rules[0].name"},
		{"rule names repeat", features.Gates{}, policy(api.FailurePolicyRule{Name: "a", Action: api.FailJobSet}, api.FailurePolicyRule{Name: "a", Action: api.FailJobSet}),
			"spec.failurePolicy.rules[1].name: Duplicate value"},
		{"rule reason unknown", features.Gates{}, policy(api.FailurePolicyRule{Name: "a", Action: api.FailJobSet, OnJobFailureReasons: []string{"Oops"}}),
			"spec.failurePolicy.rules[0].onJobFailureReasons[0]: Unsupported value"},
		{"rule pattern not RE2", features.Gates{}, policy(api.FailurePolicyRule{Name: "a", Action: api.FailJobSet, OnJobFailureMessagePatterns: []string{"("}}),
			"spec.failurePolicy.rules[0].onJobFailureMessagePatterns[0]"},
		{"rule target unknown", features.Gates{}, policy(api.FailurePolicyRule{Name: "a", Action: api.FailJobSet, TargetReplicatedJobs: []string{"ps"}}),
			"spec.failurePolicy.rules[0].targetReplicatedJobs[0]"},
		{"RestartJob without its gate", features.Gates{}, policy(api.FailurePolicyRule{Name: "a", Action: api.RestartJob}),
			"spec.failurePolicy.rules[0].action: Forbidden: RestartJob needs the RestartJob feature gate"},
		{"RestartJob with its gate", features.Gates{RestartJob: true}, policy(api.FailurePolicyRule{Name: "a", Action: api.RestartJob}), ""},
		{"coordinator names no replicated job", features.Gates{}, func(js *api.JobSet) { js.Spec.Coordinator = &api.Coordinator{ReplicatedJob: "driver"} },
			"spec.coordinator.replicatedJob"},
		{"coordinator job index out of range", features.Gates{}, func(js *api.JobSet) {
			js.Spec.Coordinator = &api.Coordinator{ReplicatedJob: "w", JobIndex: 2}
		}, "spec.coordinator.jobIndex: Invalid value: 2: must be in [0, 2)"},
		{"claim template no container mounts", features.Gates{}, func(js *api.JobSet) {
			js.Spec.VolumeClaimPolicies = []api.VolumeClaimPolicy{{Templates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "ckpt"}}}}}
		}, "no container mounts it: add a volumeMount named ckpt"},
		{"a replicated job's budget without its gate", features.Gates{}, budget(1, 4),
			"spec.replicatedJobs[0].failurePolicy: Forbidden: needs the manager's feature gate RestartBudgets"},
		{"a replicated job's budget", features.Gates{RestartBudgets: true}, budget(1, 4), ""},
		{"a budget below zero", features.Gates{RestartBudgets: true}, budget(-1, 4), "spec.replicatedJobs[0].failurePolicy.maxRestarts: Invalid value: -1: must be 0 or more"},
		{"a budget above the JobSet's maxRestarts", features.Gates{RestartBudgets: true}, budget(5, 4),
			"spec.replicatedJobs[0].failurePolicy.maxRestarts: Invalid value: 5: must be at most spec.failurePolicy.maxRestarts (4)"},
		{"an infrastructure limit below zero", features.Gates{RestartBudgets: true}, func(js *api.JobSet) {
			js.Spec.FailurePolicy = &api.FailurePolicy{MaxInfrastructureRestarts: ptr.To(int32(-1))}
		}, "spec.failurePolicy.maxInfrastructureRestarts: Invalid value: -1"},
		{"InPlaceRestart without its gate", features.Gates{}, inPlace, "spec.failurePolicy.restartStrategy: Forbidden: InPlaceRestart needs the InPlaceRestart feature gate"},
		{"InPlaceRestart with its gate", features.Gates{InPlaceRestart: true}, inPlace, ""},
		{"InPlaceRestart needs backoffLimit MaxInt32", features.Gates{InPlaceRestart: true}, func(js *api.JobSet) {
			inPlace(js)
			js.Spec.ReplicatedJobs[0].Template.Spec.BackoffLimit = ptr.To(int32(0))
		}, "spec.replicatedJobs[0].template.spec.backoffLimit"},
		{"InPlaceRestart needs podReplacementPolicy Failed", features.Gates{InPlaceRestart: true}, func(js *api.JobSet) {
			inPlace(js)
			js.Spec.ReplicatedJobs[0].Template.Spec.PodReplacementPolicy = nil
		}, "spec.replicatedJobs[0].template.spec.podReplacementPolicy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := elasticJobSet()
			tc.edit(js)
			got := ValidateCreate(js, tc.gates).ToAggregate()
			switch {
			case tc.want == "" && got != nil:
				t.Fatalf("a valid JobSet is refused: %v", got)
			case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
				t.Fatalf("ValidateCreate = %v, want %q", got, tc.want)
			}
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	suspended := func(js *api.JobSet) { js.Spec.Suspend = ptr.To(true) }
	moreCPU := func(js *api.JobSet) {
		js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}
	}
	for _, tc := range []struct {
		name      string
		gates     features.Gates
		old, edit func(*api.JobSet)
		want      string // "" allowed
	}{
		{"resources while suspended, with MutablePodResourcesForSuspendedJobSets", features.Gates{MutablePodResources: true}, suspended,
			func(js *api.JobSet) { suspended(js); moreCPU(js) }, ""},
		{"resources while suspended, without it", features.Gates{}, suspended,
			func(js *api.JobSet) { suspended(js); moreCPU(js) }, "with the MutablePodResourcesForSuspendedJobSets feature gate, the containers' resources too"},
		{"resources while running, with it", features.Gates{MutablePodResources: true}, nil, moreCPU, "spec.replicatedJobs: Forbidden: field is immutable"},
		{"nothing changed", features.Gates{}, nil, func(*api.JobSet) {}, ""},
		{"labels of the JobSet change", features.Gates{}, nil, func(js *api.JobSet) { js.Labels = map[string]string{"team": "a"} }, ""},
		{"managedBy is immutable", features.Gates{}, nil, func(js *api.JobSet) { js.Spec.ManagedBy = ptr.To("kueue.x-k8s.io/multikueue") }, "spec.managedBy: Invalid value"},
		{"a running JobSet's pod template is immutable", features.Gates{}, nil, func(js *api.JobSet) {
			js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.NodeSelector = map[string]string{"pool": "a"}
		}, "spec.replicatedJobs: Forbidden: field is immutable; while the JobSet is suspended"},
		{"a suspended JobSet's nodeSelector may change (Kueue's admission)", features.Gates{}, suspended, func(js *api.JobSet) {
			suspended(js)
			js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.NodeSelector = map[string]string{"pool": "a"}
		}, ""},
		{"resuming with a new nodeSelector", features.Gates{}, suspended, func(js *api.JobSet) {
			js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.NodeSelector = map[string]string{"pool": "a"}
		}, ""},
		{"a suspended JobSet's image is still immutable", features.Gates{}, suspended, func(js *api.JobSet) {
			suspended(js)
			js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].Image = "other"
		}, "spec.replicatedJobs: Forbidden: field is immutable"},
		{"replicas without ElasticJobSet", features.Gates{}, nil, func(js *api.JobSet) { js.Spec.ReplicatedJobs[0].Replicas = 3 },
			"with the ElasticJobSet feature gate, an Indexed replicated job's parallelism, completions and replicas may change"},
		{"an update is validated as a create too", features.Gates{}, nil, func(js *api.JobSet) { js.Spec.FailurePolicy = &api.FailurePolicy{MaxRestarts: -1} },
			"spec.failurePolicy.maxRestarts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := elasticJobSet()
			if tc.old != nil {
				tc.old(old)
			}
			js := old.DeepCopy()
			tc.edit(js)
			got := ValidateUpdate(old, js, tc.gates).ToAggregate()
			switch {
			case tc.want == "" && got != nil:
				t.Fatalf("refused: %v", got)
			case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
				t.Fatalf("ValidateUpdate = %v, want %q", got, tc.want)
			}
		})
	}
}

func TestWarnings(t *testing.T) {
	js := testobj.NewJobSet("ns", "js").ReplicatedJob("w", 1, 1).Obj()
	if w := Warnings(js, features.Gates{}); len(w) != 0 {
		t.Errorf("no deadline: warnings %v", w)
	}
	js.Spec.ActiveDeadlineSeconds = ptr.To(int64(60))
	if w := Warnings(js, features.Gates{}); len(w) != 1 || !strings.Contains(w[0], "JobSetActiveDeadlineSeconds") {
		t.Errorf("a deadline with the gate off: warnings %v, want one naming the gate", w)
	}
	if w := Warnings(js, features.Gates{ActiveDeadlineSeconds: true}); len(w) != 0 {
		t.Errorf("a deadline with the gate on: warnings %v", w)
	}
}
