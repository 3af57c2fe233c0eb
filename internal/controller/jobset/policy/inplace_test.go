package policy

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/features"
)

func TestDecideInPlace(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	at := func(attempts ...int32) []InPlacePod {
		var out []InPlacePod
		for i, a := range attempts {
			p := InPlacePod{Name: "p" + string(rune('0'+i))}
			if a >= 0 {
				p.Attempt = ptr.To(a)
			}
			out = append(out, p)
		}
		return out
	}
	waiting := func(msg string, since time.Duration) []metav1.Condition {
		return []metav1.Condition{{Type: string(api.JobSetInPlaceRestarting), Status: metav1.ConditionTrue,
			Reason: api.WaitingForPodsReason, Message: msg, LastTransitionTime: metav1.NewTime(now.Add(-since))}}
	}
	cases := []struct {
		name                string
		pods                []InPlacePod
		status              api.JobSetStatus
		stop, failed        bool
		current, previous   *int32
		condReason, condMsg string
	}{
		{name: "agents not up yet", pods: at(-1, -1, -1, -1), condReason: api.WaitingForPodsReason, condMsg: "no pod has reported it yet"},
		{name: "agents not up, pods still starting", pods: at(-1, -1)},
		{name: "no agent past the timeout: said so", pods: at(-1, -1, -1, -1),
			status:     api.JobSetStatus{Conditions: waiting("attempt 0: no pod has reported it yet (annotation jobset.sigs.k8s.io/in-place-restart-attempt, written by the agent)", 2*time.Minute)},
			condReason: api.AgentMissingReason, condMsg: "add the agent"},
		{name: "no agent and a pod restarted: recreate", pods: append(at(-1, -1, -1), InPlacePod{Name: "p3", Restarts: 1}),
			status: api.JobSetStatus{Conditions: []metav1.Condition{{Type: string(api.JobSetInPlaceRestarting), Status: metav1.ConditionFalse, Reason: api.AgentMissingReason}}},
			stop:   true, condReason: api.AgentMissingReason},
		{name: "first start, some agents up", pods: at(0, 0, -1, -1)},
		{name: "first start, all at 0: barrier lifts", pods: at(0, 0, 0, 0), current: ptr.To(int32(0))},
		{name: "one pod restarted: the others must follow", pods: at(1, 0, 0, 0),
			status:  api.JobSetStatus{CurrentInPlaceRestartAttempt: ptr.To(int32(0))},
			current: ptr.To(int32(0)), previous: ptr.To(int32(0)),
			condReason: api.WaitingForPodsReason, condMsg: "attempt 1: 1 of 4 pods in it; 3 running pods not yet (p1, p2, p3)"},
		{name: "all at the next attempt: released together", pods: at(1, 1, 1, 1),
			status:  api.JobSetStatus{CurrentInPlaceRestartAttempt: ptr.To(int32(0)), PreviousInPlaceRestartAttempt: ptr.To(int32(0))},
			current: ptr.To(int32(1)), previous: ptr.To(int32(0)), condReason: api.AllPodsRestartedReason},
		{name: "previous never goes back", pods: at(2, 1, 1, 1),
			status:  api.JobSetStatus{CurrentInPlaceRestartAttempt: ptr.To(int32(1)), PreviousInPlaceRestartAttempt: ptr.To(int32(5))},
			current: ptr.To(int32(1)), previous: ptr.To(int32(5)), condReason: api.WaitingForPodsReason},
		{name: "a slice still pending is no agent fault", pods: at(1, 1),
			status:  api.JobSetStatus{CurrentInPlaceRestartAttempt: ptr.To(int32(0)), Conditions: waiting("attempt 1: 2 of 4 pods in it; 2 pods not running yet", time.Hour)},
			current: ptr.To(int32(0)), previous: ptr.To(int32(0)), condReason: api.WaitingForPodsReason},
		{name: "stuck agent within the timeout", pods: at(1, 1, 1, 0),
			status:  api.JobSetStatus{CurrentInPlaceRestartAttempt: ptr.To(int32(0)), Conditions: waiting("attempt 1: 3 of 4 pods in it; 1 running pods not yet (p3)", 10*time.Second)},
			current: ptr.To(int32(0)), previous: ptr.To(int32(0)), condReason: api.WaitingForPodsReason},
		{name: "stuck agent past the timeout: fall back to recreate", pods: at(1, 1, 1, -1),
			status: api.JobSetStatus{CurrentInPlaceRestartAttempt: ptr.To(int32(0)), Conditions: waiting("attempt 1: 3 of 4 pods in it; 1 running pods not yet (p3)", 2*time.Minute)},
			stop:   true, current: ptr.To(int32(0)), previous: ptr.To(int32(0)), condReason: api.AgentTimeoutReason},
		{name: "attempt beyond maxRestarts fails", pods: at(3, 2, 2, 2),
			status: api.JobSetStatus{CurrentInPlaceRestartAttempt: ptr.To(int32(2))}, stop: true, failed: true, current: ptr.To(int32(2))},
		{name: "uncounted restarts do not count", pods: at(3, 3, 3, 3),
			status: api.JobSetStatus{Restarts: 1, CurrentInPlaceRestartAttempt: ptr.To(int32(2))}, current: ptr.To(int32(3)), condReason: api.AllPodsRestartedReason},
		{name: "a container restarting too fast fails", pods: []InPlacePod{{Name: "p0", Attempt: ptr.To(int32(0)), Restarts: 3}},
			stop: true, failed: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			js := &api.JobSet{Spec: api.JobSetSpec{
				FailurePolicy:  &api.FailurePolicy{MaxRestarts: 2, RestartStrategy: api.InPlaceRestart},
				ReplicatedJobs: []api.ReplicatedJob{{Name: "w", Replicas: 2}},
			}}
			js.Spec.ReplicatedJobs[0].Template.Spec.Parallelism = ptr.To(int32(2))
			status := *c.status.DeepCopy()
			e := newStatusEditor(&status, now)
			stop := decideInPlace(js, c.pods, time.Minute, e)
			_, done := finished(&status)
			if stop != c.stop || (done != nil) != c.failed {
				t.Fatalf("stop %v failed %v, want %v %v (%+v)", stop, done != nil, c.stop, c.failed, status.Conditions)
			}
			if !ptr.Equal(status.CurrentInPlaceRestartAttempt, c.current) || !ptr.Equal(status.PreviousInPlaceRestartAttempt, c.previous) {
				t.Errorf("current %v previous %v, want %v %v", ptr.Deref(status.CurrentInPlaceRestartAttempt, -1),
					ptr.Deref(status.PreviousInPlaceRestartAttempt, -1), ptr.Deref(c.current, -1), ptr.Deref(c.previous, -1))
			}
			cond := meta.FindStatusCondition(status.Conditions, string(api.JobSetInPlaceRestarting))
			switch {
			case c.condReason == "" && cond != nil:
				t.Errorf("unexpected condition %+v", cond)
			case c.condReason != "" && (cond == nil || cond.Reason != c.condReason || !strings.Contains(cond.Message, c.condMsg)):
				t.Errorf("condition %+v, want reason %s message containing %q", cond, c.condReason, c.condMsg)
			}
		})
	}
}

// TestRestartInPlace: Decide's in-place step around the protocol.
func TestRestartInPlace(t *testing.T) {
	gates := features.Gates{InPlaceRestart: true}
	inPlaceJS := func(js *api.JobSet) {
		js.Spec.FailurePolicy = &api.FailurePolicy{MaxRestarts: 3, RestartStrategy: api.InPlaceRestart}
	}
	t.Run("a failed Job is recreated alone, nothing restarts as a whole", func(t *testing.T) {
		js := jobSet(3, inPlaceJS)
		p := Decide(Observed{JobSet: js, Jobs: childJobs(js, "", batchv1.JobFailed, ""), Now: now, Gates: gates})
		if len(p.Delete) != 1 || p.Delete[0].Name != "js-w-1" || p.Status.Restarts != 0 {
			t.Fatalf("delete %d (%v), restarts %d: want js-w-1 alone, 0", len(p.Delete), p.Delete, p.Status.Restarts)
		}
		if len(p.Events) != 1 || p.Events[0].Reason != "InPlaceRestartRecreatingJob" {
			t.Errorf("events %+v", p.Events)
		}
	})
	t.Run("a FailJobSet rule still fails it", func(t *testing.T) {
		js := jobSet(3, inPlaceJS, func(js *api.JobSet) {
			js.Spec.FailurePolicy.Rules = []api.FailurePolicyRule{{Name: "r", Action: api.FailJobSet}}
		})
		p := Decide(Observed{JobSet: js, Jobs: childJobs(js, "", batchv1.JobFailed, ""), Now: now, Gates: gates})
		if _, done := finished(&p.Status); done == nil || len(p.Delete) != 0 {
			t.Fatalf("not failed, or deletes %v", p.Delete)
		}
	})
	t.Run("a stuck agent falls back to recreating every Job", func(t *testing.T) {
		js := jobSet(1, inPlaceJS)
		js.Status.CurrentInPlaceRestartAttempt = ptr.To(int32(0))
		js.Status.Conditions = []metav1.Condition{{Type: string(api.JobSetInPlaceRestarting), Status: metav1.ConditionTrue,
			Reason: api.WaitingForPodsReason, Message: "attempt 1: 1 of 2 pods in it; 1 running pods not yet (b)", LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}
		pods := []InPlacePod{{Name: "a", Attempt: ptr.To(int32(1))}, {Name: "b", Attempt: ptr.To(int32(0))}}
		p := Decide(Observed{JobSet: js, Jobs: childJobs(js), Pods: pods, Now: now, Gates: gates})
		if p.Status.Restarts != 1 || p.Status.RestartsCountTowardsMax != 1 {
			t.Fatalf("restarts %d/%d, want 1/1", p.Status.Restarts, p.Status.RestartsCountTowardsMax)
		}
		if c := meta.FindStatusCondition(p.Status.Conditions, string(api.JobSetRestartingJobSet)); c == nil || c.Reason != api.AgentTimeoutReason {
			t.Errorf("RestartingJobSet %+v", c)
		}
	})
	t.Run("gate off: the strategy is ignored, as upstream's controller does", func(t *testing.T) {
		js := jobSet(3, inPlaceJS)
		p := Decide(Observed{JobSet: js, Jobs: childJobs(js, "", batchv1.JobFailed, ""), Now: now})
		if p.Status.Restarts != 1 {
			t.Fatalf("restarts %d, want 1 (RestartJobSet)", p.Status.Restarts)
		}
	})
}
