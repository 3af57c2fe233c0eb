package jobset

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
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

func TestValidateCreateNeverRunnable(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*api.JobSet)
		want string
	}{
		{"no replicated jobs", func(js *api.JobSet) { js.Spec.ReplicatedJobs = nil }, "spec.replicatedJobs: Required value"},
		{"unnamed", func(js *api.JobSet) { js.Spec.ReplicatedJobs[0].Name = "" }, "spec.replicatedJobs[0].name: Required value"},
		{"negative maxRestarts", func(js *api.JobSet) { js.Spec.FailurePolicy = &api.FailurePolicy{MaxRestarts: -1} }, "spec.failurePolicy.maxRestarts"},
		{"exclusive key", func(js *api.JobSet) {
			js.Spec.ReplicatedJobs[0].Template.Annotations = map[string]string{api.ExclusiveKey: "two words"}
		}, "spec.replicatedJobs[0].template.metadata.annotations[alpha.jobset.sigs.k8s.io/exclusive-topology]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := elasticJobSet()
			tc.edit(js)
			if got := ValidateCreate(js, features.Gates{}).ToAggregate(); got == nil || !strings.Contains(got.Error(), tc.want) {
				t.Fatalf("ValidateCreate = %v, want %q", got, tc.want)
			}
		})
	}
	if errs := ValidateCreate(elasticJobSet(), features.Gates{}); len(errs) != 0 {
		t.Fatalf("a valid JobSet is refused: %v", errs)
	}
}
