package policy

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/features"
	"github.com/multislice/multislice/internal/testobj"
)

// TestRestartBudgets: a replicated job's own budget fails the JobSet
// naming it while the others' failures do not use it up; restarts the
// infrastructure caused count apart, bounded only by their own limit; and
// with the gate off every restart counts, as upstream's.
func TestRestartBudgets(t *testing.T) {
	js := func(loaderUsed, infraUsed int32, infraMax *int32) *api.JobSet {
		return testobj.NewJobSet("ns", "train").ReplicatedJob("trainer", 1, 1).ReplicatedJob("loader", 1, 1).
			LastReplicatedJob(func(rj *api.ReplicatedJob) { rj.FailurePolicy = &api.ReplicatedJobFailurePolicy{MaxRestarts: 1} }).
			FailurePolicy(10).Edit(func(js *api.JobSet) {
			js.Spec.FailurePolicy.MaxInfrastructureRestarts = infraMax
			js.Status.InfrastructureRestarts = infraUsed
			js.Status.RestartsCountTowardsMax = loaderUsed
			js.Status.ReplicatedJobsStatus = []api.ReplicatedJobStatus{{Name: "trainer"}, {Name: "loader", RestartsCountTowardsMax: loaderUsed}}
		}).Obj()
	}
	failed := func(rjob, reason string) *batchv1.Job {
		return testobj.NewJob("ns", "train-"+rjob+"-0").OfJobSet("train", rjob, 0).Attempt(0).Failed(reason, "", now).Obj()
	}
	on := features.Gates{RestartBudgets: true}
	cases := []struct {
		name                      string
		js                        *api.JobSet
		job                       *batchv1.Job
		gates                     features.Gates
		failedReason              string // "": it restarts
		restarts, counted, loader int32
		infra                     int32
	}{
		{name: "the loader's first failure spends its budget", js: js(0, 0, nil), job: failed("loader", "BackoffLimitExceeded"), gates: on,
			restarts: 1, counted: 1, loader: 1},
		{name: "the loader's budget spent: the JobSet fails naming it", js: js(1, 0, nil), job: failed("loader", "BackoffLimitExceeded"), gates: on,
			failedReason: api.ReachedReplicatedJobMaxRestartsReason},
		{name: "the trainer's failure does not use the loader's budget", js: js(1, 0, nil), job: failed("trainer", "BackoffLimitExceeded"), gates: on,
			restarts: 1, counted: 2, loader: 1},
		{name: "a failed slice counts as the infrastructure's", js: js(1, 0, nil), job: failed("loader", api.SliceUnhealthyReason), gates: on,
			restarts: 1, counted: 1, loader: 1, infra: 1},
		{name: "the infrastructure's limit", js: js(0, 2, ptr.To[int32](2)), job: failed("trainer", api.SliceUnhealthyReason), gates: on,
			failedReason: api.ReachedMaxInfrastructureRestartsReason},
		{name: "gate off: a failed slice counts, as upstream's", js: js(0, 0, nil), job: failed("trainer", api.SliceUnhealthyReason),
			restarts: 1, counted: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(Observed{JobSet: tc.js, Jobs: []*batchv1.Job{tc.job}, Now: now, Gates: tc.gates})
			if tc.failedReason != "" {
				c := meta.FindStatusCondition(p.Status.Conditions, string(api.JobSetFailed))
				if c == nil || c.Reason != tc.failedReason {
					t.Fatalf("Failed %+v, want reason %s", c, tc.failedReason)
				}
				if tc.failedReason == api.ReachedReplicatedJobMaxRestartsReason && !strings.Contains(c.Message, "replicated job loader") {
					t.Errorf("message %q does not name the replicated job", c.Message)
				}
				return
			}
			s := p.Status
			if s.Restarts != tc.restarts || s.RestartsCountTowardsMax != tc.counted || s.ReplicatedJobsStatus[1].RestartsCountTowardsMax != tc.loader || s.InfrastructureRestarts != tc.infra {
				t.Fatalf("restarts %d, counted %d, loader's %d, infrastructure's %d; want %d, %d, %d, %d",
					s.Restarts, s.RestartsCountTowardsMax, s.ReplicatedJobsStatus[1].RestartsCountTowardsMax, s.InfrastructureRestarts,
					tc.restarts, tc.counted, tc.loader, tc.infra)
			}
		})
	}
}
