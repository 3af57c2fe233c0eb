package policy

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/features"
)

func TestActiveDeadline(t *testing.T) {
	on := features.Gates{ActiveDeadlineSeconds: true}
	started := func(ago time.Duration) *metav1.Time { return ptr.To(metav1.NewTime(now.Add(-ago))) }
	for _, tc := range []struct {
		name     string
		gates    features.Gates
		deadline *int64
		suspend  bool
		start    *metav1.Time
		restarts int32
		rule     api.FailurePolicyAction // "": no rule (RestartJobSet)
		outcomes []batchv1.JobConditionType
		// want
		startTime    *metav1.Time
		failed       bool
		completed    bool
		deleted      int
		requeueUpTo  time.Duration // 0: no requeue for the deadline
		wantRestarts int32         // of the whole JobSet, when not tc.restarts
	}{
		{name: "first run sets startTime", gates: on, deadline: ptr.To(int64(60)), startTime: ptr.To(metav1.NewTime(now)), requeueUpTo: time.Minute},
		{name: "within the deadline: look again when it runs out", gates: on, deadline: ptr.To(int64(60)), start: started(45 * time.Second),
			startTime: started(45 * time.Second), requeueUpTo: 15 * time.Second},
		{name: "past it: fails, every Job stops", gates: on, deadline: ptr.To(int64(60)), start: started(61 * time.Second),
			startTime: started(61 * time.Second), failed: true, deleted: 2},
		{name: "restarts before do not reset it", gates: on, deadline: ptr.To(int64(60)), start: started(61 * time.Second), restarts: 3,
			startTime: started(61 * time.Second), failed: true, deleted: 2},
		{name: "a restart of the whole JobSet resets it", gates: on, deadline: ptr.To(int64(60)), start: started(30 * time.Second),
			outcomes: []batchv1.JobConditionType{batchv1.JobFailed}, startTime: ptr.To(metav1.NewTime(now)), wantRestarts: 1},
		{name: "a restart of one Job keeps it", gates: features.Gates{ActiveDeadlineSeconds: true, RestartJob: true}, deadline: ptr.To(int64(60)),
			start: started(30 * time.Second), rule: api.RestartJob,
			outcomes: []batchv1.JobConditionType{batchv1.JobFailed}, startTime: started(30 * time.Second)},
		{name: "deadline and a failed Job in one reconcile: the failure policy wins", gates: on, deadline: ptr.To(int64(60)), start: started(61 * time.Second),
			outcomes: []batchv1.JobConditionType{batchv1.JobFailed}, startTime: ptr.To(metav1.NewTime(now)), wantRestarts: 1},
		{name: "deadline and success: success wins", gates: on, deadline: ptr.To(int64(60)), start: started(61 * time.Second),
			outcomes: []batchv1.JobConditionType{batchv1.JobComplete, batchv1.JobComplete}, startTime: started(61 * time.Second), completed: true, deleted: 0},
		{name: "suspended: not counting, startTime cleared", gates: on, deadline: ptr.To(int64(60)), suspend: true, start: started(61 * time.Second)},
		{name: "no deadline: startTime kept, nothing enforced", gates: on, start: started(time.Hour), startTime: started(time.Hour)},
		{name: "gate off: nothing written or enforced", deadline: ptr.To(int64(60)), start: started(time.Hour), startTime: started(time.Hour)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := jobSet(2, func(js *api.JobSet) {
				js.Spec.ActiveDeadlineSeconds, js.Spec.Suspend = tc.deadline, ptr.To(tc.suspend)
				js.Spec.FailurePolicy = &api.FailurePolicy{MaxRestarts: 5}
				if tc.rule != "" {
					js.Spec.FailurePolicy.Rules = []api.FailurePolicyRule{{Name: "r", Action: tc.rule}}
				}
				js.Status.StartTime, js.Status.Restarts = tc.start, tc.restarts
			})
			p := Decide(Observed{JobSet: js, Jobs: childJobs(js, tc.outcomes...), Now: now, Gates: tc.gates})
			if !ptr.Equal(p.Status.StartTime, tc.startTime) && !(p.Status.StartTime != nil && tc.startTime != nil && p.Status.StartTime.Equal(tc.startTime)) {
				t.Errorf("startTime %v, want %v", p.Status.StartTime, tc.startTime)
			}
			if want := max(tc.wantRestarts, tc.restarts); p.Status.Restarts != want {
				t.Errorf("restarts %d, want %d", p.Status.Restarts, want)
			}
			failed := meta.FindStatusCondition(p.Status.Conditions, string(api.JobSetFailed))
			if got := failed != nil && failed.Reason == api.DeadlineExceededReason; got != tc.failed {
				t.Errorf("failed with DeadlineExceeded: %v, want %v (conditions %+v)", got, tc.failed, p.Status.Conditions)
			}
			if got := meta.IsStatusConditionTrue(p.Status.Conditions, string(api.JobSetCompleted)); got != tc.completed {
				t.Errorf("completed %v, want %v", got, tc.completed)
			}
			if tc.failed || tc.completed {
				if len(p.Delete) != tc.deleted || len(p.Create) > 0 {
					t.Errorf("deletes %v and creates %v, want %d deleted and nothing created", names(p.Delete), names(p.Create), tc.deleted)
				}
			}
			if tc.requeueUpTo > 0 && (p.RequeueAfter <= 0 || p.RequeueAfter > tc.requeueUpTo) {
				t.Errorf("requeue after %s, want within %s", p.RequeueAfter, tc.requeueUpTo)
			}
		})
	}
}
