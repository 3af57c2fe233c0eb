package policy

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/features"
)

// matchRule finds the first rule, in order, that some failed Job matches,
// and the earliest-failed Job among those it matches. No match: nil, nil.
func matchRule(rules []api.FailurePolicyRule, failed []*batchv1.Job) (*api.FailurePolicyRule, *batchv1.Job) {
	for i := range rules {
		var matched []*batchv1.Job
		for _, j := range failed {
			if ruleMatches(&rules[i], j) {
				matched = append(matched, j)
			}
		}
		if len(matched) > 0 {
			return &rules[i], firstFailed(matched)
		}
	}
	return nil, nil
}

func ruleMatches(r *api.FailurePolicyRule, j *batchv1.Job) bool {
	cond := jobCondition(j, batchv1.JobFailed)
	if cond == nil {
		return false
	}
	if len(r.OnJobFailureReasons) > 0 && !slices.Contains(r.OnJobFailureReasons, cond.Reason) {
		return false
	}
	if len(r.OnJobFailureMessagePatterns) > 0 && !slices.ContainsFunc(r.OnJobFailureMessagePatterns, func(p string) bool {
		re, err := regexp.Compile(p) // validated by the webhook; a bad one simply never matches
		return err == nil && re.MatchString(cond.Message)
	}) {
		return false
	}
	rjob := j.Labels[api.ReplicatedJobNameKey]
	return rjob != "" && (len(r.TargetReplicatedJobs) == 0 || slices.Contains(r.TargetReplicatedJobs, rjob))
}

func withFirstFailed(msg string, j *batchv1.Job) string {
	return fmt.Sprintf("%s (first failed job: %s)", msg, j.Name)
}

// applyFailurePolicy decides what the failure of c.failed means for js.
// It edits the status (restarts, conditions, terminal state) and events.
func applyFailurePolicy(js *api.JobSet, c children, e *statusEditor, gates features.Gates) {
	fp := js.Spec.FailurePolicy
	if fp == nil {
		e.fail(api.FailedJobsReason, withFirstFailed(api.FailedJobsMessage, firstFailed(c.failed)))
		return
	}
	rule, job := matchRule(fp.Rules, c.failed)
	action, reason := api.RestartJobSet, api.DefaultFailurePolicyReason
	if rule == nil {
		job = firstFailed(c.failed)
	} else {
		action, reason = rule.Action, api.FailurePolicyRuleReasonPrefix+rule.Name
	}
	if !gates.RestartJob {
		// The webhook refuses single-Job actions without the RestartJob gate;
		// an object admitted elsewhere gets the whole-JobSet equivalent.
		switch action {
		case api.RestartJob:
			action = api.RestartJobSet
		case api.RestartJobAndIgnoreMaxRestarts:
			action = api.RestartJobSetAndIgnoreMaxRestarts
		}
	}
	used := js.Status.RestartsCountTowardsMax + sumJobRestartsTowardsMax(js)
	infra := gates.RestartBudgets && causedByInfrastructure(job)
	switch action {
	case api.FailJobSet:
		e.fail(api.FailJobSetActionReason, withFirstFailed(api.FailJobSetActionMessage, job))
	case api.RestartJobSet, api.RestartJobSetAndIgnoreMaxRestarts:
		counts := action == api.RestartJobSet && !infra
		if counts && used >= fp.MaxRestarts {
			e.fail(api.ReachedMaxRestartsReason, withFirstFailed(api.ReachedMaxRestartsMessage, job))
			return
		}
		if !spendBudget(js, e, gates, counts, infra, job) {
			return
		}
		eventReason, msg := api.RestartJobSetAndIgnoreMaxRestartsActionReason, "applying RestartJobSetAndIgnoreMaxRestarts failure policy action"
		if counts {
			eventReason, msg = api.RestartJobSetActionReason, "applying RestartJobSet failure policy action"
		}
		restartAll(e, gates, counts, reason)
		e.event(corev1.EventTypeWarning, eventReason, withFirstFailed(msg, job))
	case api.RestartJob, api.RestartJobAndIgnoreMaxRestarts:
		counts := action == api.RestartJob && !infra
		if counts && used >= fp.MaxRestarts {
			e.fail(api.ReachedMaxRestartsReason, withFirstFailed(api.ReachedMaxRestartsMessage, job))
			return
		}
		if !spendBudget(js, e, gates, counts, infra, job) {
			return
		}
		restartOneJob(js, e, job, counts)
	}
}

// restartAll starts a new attempt of the whole JobSet: every Job of the
// current attempt becomes previous, goes, and is recreated.
func restartAll(e *statusEditor, gates features.Gates, counts bool, reason string) {
	e.status.Restarts++
	if gates.ExecutionAttemptsTracking {
		countRestart(e.status)
	}
	if counts {
		e.status.RestartsCountTowardsMax++
	}
	if gates.ActiveDeadlineSeconds {
		// KEP-1186 as merged: a restart of the whole JobSet is a fresh
		// run, as a resume is; its deadline counts from now.
		e.status.StartTime = ptr.To(e.now)
	}
	e.changed = true
	e.set(api.JobSetRestartingJobSet, metav1.ConditionTrue, reason,
		fmt.Sprintf("restarting jobset, attempt %d", e.status.Restarts), "")
}

// recreateFailed is the failure policy of an in-place JobSet: a failed Job
// (its slice failed: host lost, maintenance, preemption) is recreated on
// its own, on a healthy domain, and every other pod restarts in place
// through the agents (the new pods come up one attempt ahead). Upstream
// recreates every Job here; a FailJobSet rule still fails the JobSet.
// It returns the failed Jobs to delete; nil when the JobSet failed.
func recreateFailed(js *api.JobSet, c children, e *statusEditor) []*batchv1.Job {
	rule, job := matchRule(js.Spec.FailurePolicy.Rules, c.failed)
	if rule != nil && rule.Action == api.FailJobSet {
		e.fail(api.FailJobSetActionReason, withFirstFailed(api.FailJobSetActionMessage, job))
		return nil
	}
	out := notDeleting(c.failed)
	for _, j := range out {
		e.event(corev1.EventTypeWarning, "InPlaceRestartRecreatingJob",
			fmt.Sprintf("job %s failed: recreating it alone; every other pod of the JobSet restarts in place", j.Name))
	}
	return out
}

func sumJobRestartsTowardsMax(js *api.JobSet) int32 {
	var n int32
	for _, s := range js.Status.ReplicatedJobsStatus {
		for _, v := range s.JobRestartsCountTowardsMax {
			n += v
		}
	}
	return n
}

// restartOneJob bumps jobRestarts[idx] (and the counted twin) of one Job.
func restartOneJob(js *api.JobSet, e *statusEditor, job *batchv1.Job, counts bool) {
	rjob := job.Labels[api.ReplicatedJobNameKey]
	idx, err := strconv.Atoi(job.Labels[api.JobIndexKey])
	if err != nil {
		return
	}
	replicas := 0
	for _, rj := range js.Spec.ReplicatedJobs {
		if rj.Name == rjob {
			replicas = int(rj.Replicas)
		}
	}
	for i := range e.status.ReplicatedJobsStatus {
		s := &e.status.ReplicatedJobsStatus[i]
		if s.Name != rjob || idx >= replicas {
			continue
		}
		s.JobRestarts = grow(s.JobRestarts, replicas)
		s.JobRestarts[idx]++
		reason, msg := api.RestartJobAndIgnoreMaxRestartsActionReason, "applying RestartJobAndIgnoreMaxRestarts failure policy action"
		if counts {
			s.JobRestartsCountTowardsMax = grow(s.JobRestartsCountTowardsMax, replicas)
			s.JobRestartsCountTowardsMax[idx]++
			reason, msg = api.RestartJobActionReason, "applying RestartJob failure policy action"
		}
		e.changed = true
		e.event(corev1.EventTypeWarning, reason, withFirstFailed(msg, job))
	}
}

func grow(v []int32, n int) []int32 {
	for len(v) < n {
		v = append(v, 0)
	}
	return v
}

// restartStage deletes the previous attempt's Jobs (and any the spec no
// longer has), settles RestartingJobSet once every Job is ready again, and
// restarts on a failed Job: by the failure policy, or in place.
func restartStage(d *decision) bool {
	p, c := &d.p, d.c
	p.Delete = notDeleting(c.previous)
	if len(p.Delete) > 0 {
		p.DeletePodsGrace = restartGrace(d.js)
	}
	p.Delete = append(p.Delete, notDeleting(c.surplus)...)
	if !d.suspended && allReadyOrSucceeded(d.js, p.Status.ReplicatedJobsStatus) {
		recovered(d.e, d.js.Status.Restarts)
	}
	inPlaceOn := d.o.Gates.InPlaceRestart && InPlace(d.js)
	if len(c.failed) > 0 && !inPlaceOn {
		applyFailurePolicy(d.js, c, d.e, d.o.Gates)
		return true
	}
	return inPlaceOn && restartInPlace(d.o, c, d.e, p)
}
