package view

import (
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/placement"
)

// QueuePlace is where a JobSet waiting for capacity stands: its position
// among the waiting JobSets (1: served first) in placement's order
// (priority, then age), and those ahead of it.
type QueuePlace struct {
	Position int       `json:"position"`
	Waiting  int       `json:"waiting"`
	Priority int32     `json:"priority"`
	Ahead    []Waiting `json:"ahead"`
}

// Waiting is one JobSet waiting for capacity, as the queue shows it.
type Waiting struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Priority  int32  `json:"priority"`
	// Slices are the Jobs it wants placed on TPU domains of their own.
	Slices int32 `json:"slices"`
}

// WaitingForCapacity: placement holds the JobSet back (TopologyAssigned
// False, InsufficientCapacity).
func WaitingForCapacity(js *api.JobSet) bool {
	c := meta.FindStatusCondition(js.Status.Conditions, string(api.JobSetTopologyAssigned))
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason == api.InsufficientCapacityReason
}

// PlaceInQueue is me's place among all JobSets waiting for capacity (nil
// when me does not wait); classValue gives a PriorityClass's value.
func PlaceInQueue(me *api.JobSet, all []api.JobSet, classValue func(string) (int32, bool)) *QueuePlace {
	if !WaitingForCapacity(me) {
		return nil
	}
	var waiting []*api.JobSet
	for i := range all {
		if js := &all[i]; WaitingForCapacity(js) || js.UID == me.UID {
			waiting = append(waiting, js)
		}
	}
	queue := Rank(waiting, classValue)
	place := &QueuePlace{Waiting: len(queue), Priority: placement.Priority(me, classValue), Ahead: []Waiting{}}
	for i, w := range queue {
		if w.Namespace == me.Namespace && w.Name == me.Name {
			place.Position = i + 1
			break
		}
		place.Ahead = append(place.Ahead, w)
	}
	return place
}

// Rank orders the JobSets of a queue as placement serves them: higher
// priority first, then older; each with its priority and its slices.
func Rank(jobsets []*api.JobSet, classValue func(string) (int32, bool)) []Waiting {
	type ranked struct {
		w      Waiting
		waiter placement.Waiter
	}
	queue := make([]ranked, 0, len(jobsets))
	for _, js := range jobsets {
		w := Waiting{Namespace: js.Namespace, Name: js.Name, Priority: placement.Priority(js, classValue), Slices: tpuSlices(js)}
		queue = append(queue, ranked{w, placement.Waiter{Priority: w.Priority, Created: js.CreationTimestamp.Time}})
	}
	sort.SliceStable(queue, func(a, b int) bool { return queue[a].waiter.Before(queue[b].waiter) })
	out := make([]Waiting, len(queue))
	for i, r := range queue {
		out[i] = r.w
	}
	return out
}

// tpuSlices counts the Jobs of replicated jobs whose pods request TPUs.
func tpuSlices(js *api.JobSet) int32 {
	var n int32
	for _, rj := range js.Spec.ReplicatedJobs {
		if gke.RequestsTPU(rj.Template.Spec.Template.Spec) {
			n += rj.Replicas
		}
	}
	return n
}
