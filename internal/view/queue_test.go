package view

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

// TestPlaceInQueue: a waiting JobSet's place is placement's order
// (priority, then age), and it names who is ahead.
func TestPlaceInQueue(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	js := func(name, class string, age time.Duration, waiting bool) api.JobSet {
		j := api.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name), CreationTimestamp: metav1.NewTime(t0.Add(-age))},
			Spec: api.JobSetSpec{ReplicatedJobs: []api.ReplicatedJob{{Name: "slice", Replicas: 2}}}}
		j.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.PriorityClassName = class
		if waiting {
			j.Status.Conditions = []metav1.Condition{{Type: string(api.JobSetTopologyAssigned), Status: metav1.ConditionFalse, Reason: api.InsufficientCapacityReason}}
		}
		return j
	}
	classes := map[string]int32{"high": 750, "low": 250}
	value := func(n string) (int32, bool) { v, ok := classes[n]; return v, ok }
	all := []api.JobSet{js("old-low", "low", time.Hour, true), js("new-high", "high", time.Minute, true),
		js("me", "low", 30*time.Minute, true), js("running", "high", 2*time.Hour, false)}
	place := PlaceInQueue(&all[2], all, value)
	if place == nil || place.Position != 3 || place.Waiting != 3 || place.Priority != 250 || len(place.Ahead) != 2 ||
		place.Ahead[0].Name != "new-high" || place.Ahead[1].Name != "old-low" {
		t.Fatalf("place %+v: want 3 of 3, behind new-high (higher priority) and old-low (older)", place)
	}
	if PlaceInQueue(&all[3], all, value) != nil {
		t.Errorf("a running JobSet has a place in the queue")
	}
}
