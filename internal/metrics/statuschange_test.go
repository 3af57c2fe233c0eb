package metrics

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

func TestStatusChange(t *testing.T) {
	cond := func(typ, status, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionStatus(status), Reason: "R", Message: msg}
	}
	placed := api.JobSetStatus{Conditions: []metav1.Condition{cond("TopologyAssigned", "True", "np-0")},
		ReplicatedJobsStatus: []api.ReplicatedJobStatus{{Name: "slice", Active: 1}}}
	ready := *placed.DeepCopy()
	ready.ReplicatedJobsStatus[0].Ready = 1
	for _, tc := range []struct {
		name     string
		old, now api.JobSetStatus
		want     string
	}{
		{"nothing", placed, placed, "none"},
		{"the first write", api.JobSetStatus{}, placed, "TopologyAssigned+counts"},
		{"counts only", placed, ready, "counts"},
		{"a message", placed, api.JobSetStatus{Conditions: []metav1.Condition{cond("TopologyAssigned", "True", "np-1")},
			ReplicatedJobsStatus: placed.ReplicatedJobsStatus}, "TopologyAssigned"},
		{"a condition gone, another come", api.JobSetStatus{Conditions: []metav1.Condition{cond("Suspended", "True", "")}},
			api.JobSetStatus{Conditions: []metav1.Condition{cond("Completed", "True", "")}, TerminalState: "Completed"}, "Completed+Suspended+terminal"},
		{"a restart", placed, api.JobSetStatus{Conditions: placed.Conditions, ReplicatedJobsStatus: placed.ReplicatedJobsStatus, Restarts: 1,
			ExecutionAttempts: ptr.To[int32](1)}, "restarts"},
		{"started", api.JobSetStatus{}, api.JobSetStatus{StartTime: ptr.To(metav1.Now())}, "startTime"},
	} {
		if got := StatusChange(&tc.old, &tc.now); got != tc.want {
			t.Errorf("%s: StatusChange = %q, want %q", tc.name, got, tc.want)
		}
	}
}
