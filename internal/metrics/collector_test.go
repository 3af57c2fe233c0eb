package metrics

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

func TestJobSetGauges(t *testing.T) {
	since := metav1.NewTime(time.Unix(1_800_000_000, 0))
	jobsets := []api.JobSet{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "train"}, Spec: api.JobSetSpec{FailurePolicy: &api.FailurePolicy{MaxRestarts: 4}},
			Status: api.JobSetStatus{Restarts: 3}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "queued"}, Status: api.JobSetStatus{Conditions: []metav1.Condition{{
			Type: string(api.JobSetTopologyAssigned), Status: metav1.ConditionFalse, LastTransitionTime: since}}}},
	}
	ReportJobSets(func(context.Context) ([]api.JobSet, error) { return jobsets, nil }, func(js *api.JobSet) string {
		if js.Name == "queued" {
			return "Waiting"
		}
		return "Running"
	})
	defer source.Store(nil)
	want := `
# HELP multislice_jobset_max_restarts The JobSet's failurePolicy.maxRestarts (0 when it has no failure policy).
# TYPE multislice_jobset_max_restarts gauge
multislice_jobset_max_restarts{jobset_name="queued",namespace="ns"} 0
multislice_jobset_max_restarts{jobset_name="train",namespace="ns"} 4
# HELP multislice_jobset_restarts The JobSet's restarts so far (status.restarts).
# TYPE multislice_jobset_restarts gauge
multislice_jobset_restarts{jobset_name="queued",namespace="ns"} 0
multislice_jobset_restarts{jobset_name="train",namespace="ns"} 3
# HELP multislice_jobset_state 1 for the state each JobSet is in: Running, Waiting (for capacity), Restarting, Suspended, Completed or Failed.
# TYPE multislice_jobset_state gauge
multislice_jobset_state{jobset_name="queued",namespace="ns",state="Waiting"} 1
multislice_jobset_state{jobset_name="train",namespace="ns",state="Running"} 1
# HELP multislice_jobset_waiting_since_seconds When a JobSet waiting for capacity (TopologyAssigned=False) began to wait, as a Unix time; absent when it is not waiting.
# TYPE multislice_jobset_waiting_since_seconds gauge
multislice_jobset_waiting_since_seconds{jobset_name="queued",namespace="ns"} 1.8e+09
`
	if err := testutil.CollectAndCompare(jobSetCollector{}, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
