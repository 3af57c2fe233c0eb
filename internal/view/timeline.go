package view

import (
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

// Kinds of timeline entries.
const (
	EntryFault     = "fault"     // something broke: a slice unhealthy, a Job failed
	EntryRestart   = "restart"   // the controller began a restart
	EntryRecovered = "recovered" // every Job ready again
	EntryPlaced    = "placed"    // slices got their topology domains
	EntryWaiting   = "waiting"   // waiting for capacity
	EntryWarning   = "warning"
	EntryInfo      = "info"
)

// Entry is one step of a JobSet's history.
type Entry struct {
	Time    time.Time `json:"time"`
	Kind    string    `json:"kind"`
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
	// Since is the time from the fault (or restart) that began this
	// episode; zero outside an episode.
	Since time.Duration `json:"since"`
}

// kindOf sorts the JobSet's events by reason.
var kindOf = map[string]string{
	api.SliceUnhealthyReason:                          EntryFault,
	api.FailedJobsReason:                              EntryFault,
	api.FailJobSetActionReason:                        EntryFault,
	api.ReachedMaxRestartsReason:                      EntryFault,
	api.DeadlineExceededReason:                        EntryFault,
	api.RestartJobSetActionReason:                     EntryRestart,
	api.RestartJobSetAndIgnoreMaxRestartsActionReason: EntryRestart,
	api.RestartJobActionReason:                        EntryRestart,
	api.RestartJobAndIgnoreMaxRestartsActionReason:    EntryRestart,
	api.JobsReadyReason:                               EntryRecovered,
	api.DomainsAssignedReason:                         EntryPlaced,
	api.InsufficientCapacityReason:                    EntryWaiting,
}

// Timeline is a JobSet's restarts and placements, oldest first, from its
// Events (the controller's, slice health's) and its placement condition
// (the controller writes no event that would repeat it): an episode runs
// from a fault or restart to the recovery that follows it.
func Timeline(js *api.JobSet, events []corev1.Event) []Entry {
	sorted := append([]corev1.Event(nil), events...)
	if c := meta.FindStatusCondition(js.Status.Conditions, string(api.JobSetTopologyAssigned)); c != nil &&
		c.Status == metav1.ConditionTrue && c.Reason == api.DomainsAssignedReason && !slices.ContainsFunc(events, func(e corev1.Event) bool {
		return e.Reason == api.DomainsAssignedReason // a manager before 2026-12 wrote one
	}) {
		sorted = append(sorted, corev1.Event{Type: corev1.EventTypeNormal, Reason: c.Reason, Message: c.Message,
			EventTime: metav1.NewMicroTime(c.LastTransitionTime.Time)})
	}
	sort.SliceStable(sorted, func(a, b int) bool { return eventTime(sorted[a]).Before(eventTime(sorted[b])) })
	var out []Entry
	var began time.Time
	for _, e := range sorted {
		kind, ok := kindOf[e.Reason]
		if !ok {
			kind = EntryInfo
			if e.Type == corev1.EventTypeWarning {
				kind = EntryWarning
			}
		}
		t := eventTime(e)
		if (kind == EntryFault || kind == EntryRestart) && began.IsZero() {
			began = t
		}
		entry := Entry{Time: t, Kind: kind, Reason: e.Reason, Message: e.Message}
		if !began.IsZero() {
			entry.Since = t.Sub(began)
		}
		if kind == EntryRecovered {
			began = time.Time{}
		}
		out = append(out, entry)
	}
	return out
}
