package policy

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

// Event is an event to record once the status write has succeeded.
type Event struct {
	Type, Reason, Message string
}

// statusEditor changes a JobSet status the way upstream does, and collects
// the events those changes announce.
type statusEditor struct {
	status  *api.JobSetStatus
	now     metav1.Time
	changed bool
	events  []Event
}

func newStatusEditor(status *api.JobSetStatus, now time.Time) *statusEditor {
	return &statusEditor{status: status, now: metav1.NewTime(now)}
}

// set writes a condition with upstream's rules: a False condition is only
// written over an existing one; a change of reason or message alone keeps
// lastTransitionTime. It reports whether anything changed.
func (e *statusEditor) set(typ api.JobSetConditionType, status metav1.ConditionStatus, reason, message, eventType string) bool {
	old := meta.FindStatusCondition(e.status.Conditions, string(typ))
	if old == nil && status == metav1.ConditionFalse {
		return false
	}
	if old != nil && old.Status == status && old.Reason == reason && old.Message == message {
		return false
	}
	// SetStatusCondition keeps lastTransitionTime when only reason or message change.
	meta.SetStatusCondition(&e.status.Conditions, metav1.Condition{
		Type: string(typ), Status: status, Reason: reason, Message: message, LastTransitionTime: e.now,
	})
	e.changed = true
	if eventType != "" {
		e.events = append(e.events, Event{Type: eventType, Reason: reason, Message: message})
	}
	return true
}

// put writes a condition like set, but also when it is False and new: for
// Multislice's own conditions, whose False state is news in itself.
func (e *statusEditor) put(typ api.JobSetConditionType, status metav1.ConditionStatus, reason, message, eventType string) {
	if meta.FindStatusCondition(e.status.Conditions, string(typ)) == nil {
		meta.SetStatusCondition(&e.status.Conditions, metav1.Condition{
			Type: string(typ), Status: status, Reason: reason, Message: message, LastTransitionTime: e.now,
		})
		e.changed = true
		if eventType != "" {
			e.event(eventType, reason, message)
		}
		return
	}
	e.set(typ, status, reason, message, eventType)
}

func (e *statusEditor) event(typ, reason, message string) {
	e.events = append(e.events, Event{Type: typ, Reason: reason, Message: message})
}

// fail sets Failed, the terminal state, and settles RestartingJobSet.
func (e *statusEditor) fail(reason, message string) {
	e.set(api.JobSetFailed, metav1.ConditionTrue, reason, message, corev1.EventTypeWarning)
	e.setTerminal(api.TerminalStateFailed)
	e.set(api.JobSetRestartingJobSet, metav1.ConditionFalse, api.JobSetFailedReason, "jobset failed", "")
}

// complete sets Completed, the terminal state, and settles RestartingJobSet.
func (e *statusEditor) complete() {
	e.set(api.JobSetCompleted, metav1.ConditionTrue, api.AllJobsCompletedReason, api.AllJobsCompletedMessage, corev1.EventTypeNormal)
	e.setTerminal(api.TerminalStateCompleted)
	e.set(api.JobSetRestartingJobSet, metav1.ConditionFalse, api.JobSetCompletedReason, "jobset completed", "")
}

func (e *statusEditor) setTerminal(state string) {
	if e.status.TerminalState != state {
		e.status.TerminalState = state
		e.changed = true
	}
}

// finished reports whether the JobSet has a True Completed or Failed condition.
func finished(status *api.JobSetStatus) (api.JobSetConditionType, *metav1.Condition) {
	for _, t := range []api.JobSetConditionType{api.JobSetCompleted, api.JobSetFailed} {
		if c := meta.FindStatusCondition(status.Conditions, string(t)); c != nil && c.Status == metav1.ConditionTrue {
			return t, c
		}
	}
	return "", nil
}
