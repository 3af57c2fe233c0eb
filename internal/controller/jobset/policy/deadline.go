package policy

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

// trackStart keeps status.startTime as KEP-1186 defines it (as a Job's):
// set when the JobSet runs, cleared while it is suspended, so that a
// resume starts the count again. A restart of the whole JobSet sets it
// anew (restartAll); a restart of one Job (RestartJob) keeps it.
func trackStart(js *api.JobSet, status *api.JobSetStatus, now time.Time) {
	switch {
	case ptr.Deref(js.Spec.Suspend, false):
		status.StartTime = nil
	case status.StartTime == nil:
		status.StartTime = ptr.To(metav1.NewTime(now))
	}
}

// deadlineLeft is how long the JobSet may still run before
// spec.activeDeadlineSeconds runs out: 0 or less once it has, and ok false
// when no deadline counts (none set, or not running: trackStart cleared
// startTime while suspended).
func deadlineLeft(js *api.JobSet, status *api.JobSetStatus, now time.Time) (left time.Duration, ok bool) {
	if js.Spec.ActiveDeadlineSeconds == nil || status.StartTime == nil {
		return 0, false
	}
	deadline := status.StartTime.Add(time.Duration(*js.Spec.ActiveDeadlineSeconds) * time.Second)
	return deadline.Sub(now), true
}

// deadlineMessage says why the JobSet failed, and what stopping it freed.
func deadlineMessage(js *api.JobSet, status *api.JobSetStatus, now time.Time) string {
	return fmt.Sprintf("the JobSet ran for %s since %s, past spec.activeDeadlineSeconds (%ds): every child Job is stopped",
		now.Sub(status.StartTime.Time).Round(time.Second), status.StartTime.UTC().Format(time.RFC3339), *js.Spec.ActiveDeadlineSeconds)
}

// deadlineStage ends a JobSet whose activeDeadlineSeconds ran out:
// completed if its success policy holds, else failed. A Job that failed in
// the same reconcile goes to the failure policy first (KEP-1186): it
// restarts (and so renews the deadline) or fails the JobSet with its own
// reason.
func deadlineStage(d *decision) bool {
	if !d.o.Gates.ActiveDeadlineSeconds {
		return false
	}
	trackStart(d.js, &d.p.Status, d.o.Now)
	left, ok := deadlineLeft(d.js, &d.p.Status, d.o.Now)
	switch {
	case !ok:
		return false
	case left > 0:
		d.deadlineLeft = left
		return false
	case len(d.c.failed) > 0:
		return false
	}
	if len(d.c.succeeded) > 0 && succeeded(d.js, d.p.Status.ReplicatedJobsStatus) {
		d.e.complete() // success is judged first: a finished run is never failed by its deadline
	} else {
		d.e.fail(api.DeadlineExceededReason, deadlineMessage(d.js, &d.p.Status, d.o.Now))
	}
	d.p.Delete = notDeleting(d.c.active)
	return true
}
