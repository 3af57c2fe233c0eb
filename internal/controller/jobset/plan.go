package jobset

import (
	"fmt"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/features"
	"github.com/multislice/multislice/internal/naming"
	"github.com/multislice/multislice/internal/placement"
	"github.com/multislice/multislice/internal/podtemplate"
)

// Observed is everything a reconcile reads before it decides.
type Observed struct {
	JobSet *api.JobSet
	// Jobs are the JobSet's children (found by owner UID).
	Jobs []*batchv1.Job
	// ServiceExists tells whether the headless Service is there.
	ServiceExists bool
	Now           time.Time
	Gates         features.Gates
	// Pods are the JobSet's running pods, read only for an in-place
	// restart (InPlaceRestart gate and strategy).
	Pods []InPlacePod
	// AgentTimeout bounds an in-place restart that makes no progress
	// (0: DefaultAgentTimeout).
	AgentTimeout time.Duration
	// PodsRefused is a child Job whose pods the Job controller cannot
	// create (its FailedCreate events), read only when a Job has no pods.
	PodsRefused *PodRefusal
	// Placement is what placing an exclusive-topology JobSet needs (nil:
	// it needs none now, or placement is off).
	Placement *Placement
	// LastStatusWrite is when this JobSet's status was last written;
	// status writes that change only counts wait CountsInterval after it.
	LastStatusWrite time.Time
	CountsInterval  time.Duration
	// Scheduling is what exists of the JobSet's Workload and PodGroups
	// (nil: the gate is off or spec.scheduling is not set).
	Scheduling *SchedulingObjects
}

// Plan is what a reconcile should do, decided by Decide from Observed alone.
type Plan struct {
	// Status is the JobSet status to write, when StatusChanged.
	Status        api.JobSetStatus
	StatusChanged bool
	// Events are recorded after the status write succeeds.
	Events []Event

	Create []*batchv1.Job
	// Scale are active Jobs with new parallelism/completions (ElasticJobSet).
	Scale []*batchv1.Job
	// Pending are Jobs of the current attempt that cannot be created yet
	// because their previous incarnation is still going away; placement
	// reserves their domains together with Create, so a restart stays a gang.
	Pending []*batchv1.Job
	// Delete are removed with foreground propagation (their pods first).
	Delete []*batchv1.Job
	// DeletePodsGrace, when set, deletes the pods of Delete first with this
	// grace period (the RestartGracePeriodAnnotation knob).
	DeletePodsGrace *int64
	// Suspend and Resume change spec.suspend of existing Jobs; Resume also
	// carries the pod-template fields (labels, annotations, nodeSelector,
	// tolerations, schedulingGates) merged in from the replicated job.
	Suspend, Resume []*batchv1.Job
	Service         *corev1.Service
	Claims          []*corev1.PersistentVolumeClaim
	// ReleaseDomains: the JobSet lets its domains go (it finished, is
	// suspended, or its pods cannot be created while Delete holds its Jobs).
	ReleaseDomains bool
	// HoldDomains reserves domains for the JobSet's Jobs (exclusive key ->
	// Job name -> domain), those not created yet included; WaitForDomains
	// queues it.
	HoldDomains    map[string]map[string]string
	WaitForDomains *placement.Waiter
	// Workload and PodGroups are created before Create's Jobs
	// (spec.scheduling); DeleteWorkload and DeletePodGroups name a
	// suspended JobSet's, which go.
	Workload        *schedulingv1beta1.Workload
	PodGroups       []*schedulingv1beta1.PodGroup
	DeleteWorkload  string
	DeletePodGroups []string
	// DeleteJobSet: the TTL after finishing has expired.
	DeleteJobSet bool
	RequeueAfter time.Duration
}

// Decide is the JobSet controller's whole policy as a pure function: it
// follows upstream's reconcile order (reference section 2.1).
func Decide(o Observed) (p Plan) {
	js := o.JobSet
	status := *js.Status.DeepCopy()
	e := newStatusEditor(&status, o.Now)
	defer func() { // every return below hands back the edited status
		p.Status, p.Events = status, e.events
		p.StatusChanged = e.changed || !equality.Semantic.DeepEqual(status, js.Status)
		if _, done := finished(&status); done != nil {
			p.ReleaseDomains = true
		}
		batchCounts(o, &p)
	}()

	advise(js, e)
	c := sortChildren(js, o.Jobs, o.Gates.RestartJob)
	status.ReplicatedJobsStatus = replicatedJobsStatus(js, c)
	if o.Gates.ExecutionAttemptsTracking {
		countExecution(js, &status)
	}

	if _, cond := finished(&js.Status); cond != nil {
		p.Delete = notDeleting(c.active)
		p.DeleteJobSet, p.RequeueAfter = ttlExpired(js, cond, o.Now)
		return p
	}
	if o.Gates.ActiveDeadlineSeconds {
		trackStart(js, &status, o.Now)
		// A Job that failed in the same reconcile goes to the failure
		// policy first (KEP-1186): it restarts (and so renews the
		// deadline) or fails the JobSet with its own reason.
		if left, ok := deadlineLeft(js, &status, o.Now); ok && left <= 0 && len(c.failed) == 0 {
			if len(c.succeeded) > 0 && succeeded(js, status.ReplicatedJobsStatus) {
				e.complete() // success is judged first: a finished run is never failed by its deadline
			} else {
				e.fail(api.DeadlineExceededReason, deadlineMessage(js, &status, o.Now))
			}
			p.Delete = notDeleting(c.active)
			return p
		} else if ok && left > 0 {
			defer func() {
				if p.RequeueAfter == 0 || left < p.RequeueAfter {
					p.RequeueAfter = left // look again when the deadline runs out
				}
			}()
		}
	}
	p.Delete = notDeleting(c.previous)
	if len(p.Delete) > 0 {
		p.DeletePodsGrace = restartGrace(js)
	}
	p.Delete = append(p.Delete, notDeleting(c.surplus)...)

	if !ptr.Deref(js.Spec.Suspend, false) && allReadyOrSucceeded(js, status.ReplicatedJobsStatus) {
		recovered(e, js.Status.Restarts)
	}
	inPlaceOn := o.Gates.InPlaceRestart && inPlace(js)
	if len(c.failed) > 0 && !inPlaceOn {
		applyFailurePolicy(js, c, e, o.Gates)
		return p
	}
	if inPlaceOn && restartInPlace(o, c, e, &p) {
		return p
	}
	if len(c.succeeded) > 0 && succeeded(js, status.ReplicatedJobsStatus) {
		e.complete()
		return p
	}
	if dnsHostnames(js) && !o.ServiceExists {
		p.Service = headlessService(js)
	}
	p.Claims = claims(js)
	if len(js.Spec.ReplicatedJobs) == 0 {
		// Upstream accepts it, gives it its Service and nothing else; say why nothing runs.
		e.put(ChildJobsCreated, metav1.ConditionFalse, NoReplicatedJobsReason,
			"spec.replicatedJobs is empty: this JobSet has nothing to run and stays as it is (as upstream's does); delete it, or create it again with a replicated job", corev1.EventTypeWarning)
		return p
	}
	if o.Gates.ElasticJobSet {
		p.Scale = rescaled(js, c.active)
	}

	suspended := ptr.Deref(js.Spec.Suspend, false)
	if !suspended {
		placed := meta.IsStatusConditionTrue(status.Conditions, string(TopologyAssigned))
		if decidePodCreation(o, c.active, placed, e, &p) {
			return p
		}
		if o.PodsRefused == nil {
			expectPods(c.active, o.Now, &p)
		}
	}
	startable := startable(js, status.ReplicatedJobsStatus, e, suspended)
	blocked := len(c.previous) > 0 && js.Spec.FailurePolicy != nil &&
		js.Spec.FailurePolicy.RestartStrategy == api.BlockingRecreate
	previous := map[string]bool{}
	for _, j := range c.previous {
		previous[j.Name] = true
	}
	for _, id := range identities(js) {
		if !startable[id.rjob.Name] {
			continue
		}
		name := naming.JobName(js.Name, id.rjob.Name, id.index)
		_, exists := c.byName[name]
		switch {
		case !exists && !blocked:
			p.Create = append(p.Create, constructJob(js, id, o.Gates.RestartJob, status.ExecutionAttempts))
		case !exists || previous[name]:
			p.Pending = append(p.Pending, constructJob(js, id, o.Gates.RestartJob, status.ExecutionAttempts))
		}
	}

	if suspended {
		for _, j := range c.active {
			if !ptr.Deref(j.Spec.Suspend, false) {
				p.Suspend = append(p.Suspend, j)
			}
		}
		e.set(api.JobSetSuspended, metav1.ConditionTrue, api.SuspendedReason, api.SuspendedMessage, corev1.EventTypeNormal)
		e.set(api.JobSetRestartingJobSet, metav1.ConditionFalse, api.JobSetSuspendedReason, "jobset is suspended", "")
		// A suspended JobSet (e.g. queued by Kueue) holds no capacity; it
		// is placed when it resumes.
		p.ReleaseDomains = true
	} else {
		byName := map[string]jobIdentity{}
		for _, id := range identities(js) {
			byName[naming.JobName(js.Name, id.rjob.Name, id.index)] = id
		}
		for _, j := range c.active {
			id, known := byName[j.Name]
			if known && ptr.Deref(j.Spec.Suspend, false) && startable[j.Labels[api.ReplicatedJobNameKey]] {
				p.Resume = append(p.Resume, resumed(js, j, id, o.Gates, status.ExecutionAttempts))
			}
		}
		e.set(api.JobSetSuspended, metav1.ConditionFalse, api.ResumedReason, api.ResumedMessage, corev1.EventTypeNormal)
		if len(p.Resume) > 0 && o.Gates.WorkloadAwareScheduling {
			regroup(js, &p)
		}
	}
	if o.Scheduling != nil {
		schedule(o, &p, e, suspended)
	}
	if !suspended {
		place(o, &p, e)
	}
	return p
}

// waitingMessageInterval spaces the writes of a waiting JobSet whose
// InsufficientCapacity message alone changes ("4 are free", "3 are
// free"): ten JobSets queued behind 300 being placed would otherwise write
// their status and an event 3,000 times, load that delays the very
// placements they wait for.
const waitingMessageInterval = 10 * time.Second

// inPlaceProgressInterval spaces the writes of an in-place restart's
// progress ("attempt 1: 512 of 1,024 pods in it"): every agent watches its
// JobSet, so each write is one watch event per pod; a quarter of the agent
// timeout at most, since progress restarts it.
func inPlaceProgressInterval(agentTimeout time.Duration) time.Duration {
	if agentTimeout == 0 {
		agentTimeout = DefaultAgentTimeout
	}
	return min(5*time.Second, agentTimeout/4)
}

// batchCounts postpones a status write that changes nothing but counts
// when the last write was less than CountsInterval ago (an in-place
// restart's progress: inPlaceProgressInterval; a waiting JobSet's
// message: waitingMessageInterval); the requeue brings it back, so the
// status is at most that stale.
func batchCounts(o Observed, p *Plan) {
	if !p.StatusChanged || o.CountsInterval == 0 || o.LastStatusWrite.IsZero() {
		return
	}
	old, new := &o.JobSet.Status, &p.Status
	interval := o.CountsInterval
	switch {
	case onlyCountsChanged(old, new):
		if inPlaceProgressChanged(old, new) {
			interval = max(interval, inPlaceProgressInterval(o.AgentTimeout))
		}
	case onlyWaitingMessageChanged(old, new):
		interval = waitingMessageInterval
	default:
		return
	}
	if wait := interval - o.Now.Sub(o.LastStatusWrite); wait > 0 {
		p.StatusChanged = false
		if p.RequeueAfter == 0 || wait < p.RequeueAfter {
			p.RequeueAfter = wait
		}
	}
}

// onlyWaitingMessageChanged: the JobSet waits for domains before and
// after, and what changed is the message saying why (or counts).
func onlyWaitingMessageChanged(old, new *api.JobSetStatus) bool {
	a, b := old.DeepCopy(), new.DeepCopy()
	ca, cb := meta.FindStatusCondition(a.Conditions, string(TopologyAssigned)), meta.FindStatusCondition(b.Conditions, string(TopologyAssigned))
	if ca == nil || cb == nil || ca.Status != metav1.ConditionFalse || cb.Status != metav1.ConditionFalse ||
		ca.Reason != api.InsufficientCapacityReason || cb.Reason != api.InsufficientCapacityReason {
		return false
	}
	cb.Message = ca.Message
	return onlyCountsChanged(a, b)
}

// onlyCountsChanged: the new status differs from the old only in Job
// counts, or in the progress of an in-place restart that keeps waiting
// (which would otherwise be written once per pod that reaches it).
func onlyCountsChanged(old, new *api.JobSetStatus) bool {
	a, b := old.DeepCopy(), new.DeepCopy()
	a.ReplicatedJobsStatus, b.ReplicatedJobsStatus = nil, nil
	if waitingInPlace(a) && waitingInPlace(b) {
		meta.RemoveStatusCondition(&a.Conditions, string(api.JobSetInPlaceRestarting))
		meta.RemoveStatusCondition(&b.Conditions, string(api.JobSetInPlaceRestarting))
	}
	return equality.Semantic.DeepEqual(a, b)
}

// inPlaceProgressChanged: an in-place restart waits before and after, and
// what it says about its progress changed.
func inPlaceProgressChanged(old, new *api.JobSetStatus) bool {
	if !waitingInPlace(old) || !waitingInPlace(new) {
		return false
	}
	a := meta.FindStatusCondition(old.Conditions, string(api.JobSetInPlaceRestarting))
	b := meta.FindStatusCondition(new.Conditions, string(api.JobSetInPlaceRestarting))
	return a.Message != b.Message
}

func waitingInPlace(st *api.JobSetStatus) bool {
	c := meta.FindStatusCondition(st.Conditions, string(api.JobSetInPlaceRestarting))
	return c != nil && c.Status == metav1.ConditionTrue
}

func restartGrace(js *api.JobSet) *int64 {
	v, ok := js.Annotations[api.RestartGracePeriodAnnotation]
	if !ok {
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return nil // the webhook refuses such values; ignore them here
	}
	return &n
}

func notDeleting(jobs []*batchv1.Job) []*batchv1.Job {
	var out []*batchv1.Job
	for _, j := range jobs {
		if j.DeletionTimestamp == nil {
			out = append(out, j)
		}
	}
	return out
}

func allReadyOrSucceeded(js *api.JobSet, st []api.ReplicatedJobStatus) bool {
	for i, rj := range js.Spec.ReplicatedJobs {
		if st[i].Ready+st[i].Succeeded < rj.Replicas {
			return false
		}
	}
	return true
}

// succeeded applies the success policy (default: All of all).
func succeeded(js *api.JobSet, st []api.ReplicatedJobStatus) bool {
	policy := api.SuccessPolicy{Operator: api.OperatorAll}
	if js.Spec.SuccessPolicy != nil {
		policy = *js.Spec.SuccessPolicy
	}
	targeted := func(name string) bool {
		if len(policy.TargetReplicatedJobs) == 0 {
			return true
		}
		for _, t := range policy.TargetReplicatedJobs {
			if t == name {
				return true
			}
		}
		return false
	}
	any, all := false, true
	for i, rj := range js.Spec.ReplicatedJobs {
		if !targeted(rj.Name) {
			continue
		}
		any = any || st[i].Succeeded > 0
		all = all && st[i].Succeeded >= rj.Replicas
	}
	if policy.Operator == api.OperatorAny {
		return any
	}
	return all
}

// ttlExpired: delete the JobSet once ttlSecondsAfterFinished has passed
// since it finished; otherwise come back when it will have.
func ttlExpired(js *api.JobSet, cond *metav1.Condition, now time.Time) (bool, time.Duration) {
	if js.Spec.TTLSecondsAfterFinished == nil || js.DeletionTimestamp != nil {
		return false, 0
	}
	expiry := cond.LastTransitionTime.Add(time.Duration(*js.Spec.TTLSecondsAfterFinished) * time.Second)
	if !now.Before(expiry) {
		return true, 0
	}
	return false, expiry.Sub(now)
}

// resumed returns a copy of j unsuspended, its pod template's scheduling
// directives (nodeSelector, tolerations, scheduling gates) and the labels
// and annotations the JobSet writes rebuilt from the JobSet's template, as
// a new Job of the same identity would have them. A merge kept what Kueue
// injected for a flavor the workload was since evicted from, so its pods
// asked for both flavors' nodes and never scheduled (upstream #1294).
// Placement pins the Job to its domain again on top. The execution attempt
// it resumes in is set in the same update, so no pod starts with a stale one.
// With the MutablePodResourcesForSuspendedJobSets gate, the containers' and
// the pod's resources are rebuilt too (KEP-1150: Kueue right-sized them).
func resumed(js *api.JobSet, j *batchv1.Job, id jobIdentity, gates features.Gates, execution *int32) *batchv1.Job {
	out := j.DeepCopy()
	out.Spec.Suspend = ptr.To(false)
	if execution != nil {
		a := map[string]string{api.ExecutionAttemptKey: strconv.Itoa(int(*execution))}
		out.Labels, out.Annotations = merge(out.Labels, a), merge(out.Annotations, a)
	}
	fresh := constructJob(js, id, gates.RestartJob, execution).Spec.Template
	to := &out.Spec.Template
	to.Labels = merge(jobControllerLabels(j), fresh.Labels)
	to.Annotations = fresh.Annotations
	to.Spec.NodeSelector = fresh.Spec.NodeSelector
	to.Spec.Tolerations = fresh.Spec.Tolerations
	to.Spec.SchedulingGates = fresh.Spec.SchedulingGates
	if gates.MutablePodResources {
		podtemplate.CopyResources(&to.Spec, &fresh.Spec)
	}
	return out
}

// jobControllerLabels are the pod-template labels the Job API wrote (its
// selector's, job-name): kept, or the update would no longer match.
func jobControllerLabels(j *batchv1.Job) map[string]string {
	var selector map[string]string
	if j.Spec.Selector != nil {
		selector = j.Spec.Selector.MatchLabels
	}
	out := map[string]string{}
	for k, v := range j.Spec.Template.Labels {
		_, selected := selector[k]
		if selected || k == batchv1.JobNameLabel || k == batchv1.ControllerUidLabel || k == api.LegacyJobNameLabel || k == api.LegacyControllerUIDLabel {
			out[k] = v
		}
	}
	return out
}

// recovered settles RestartingJobSet once every Job is ready again, and
// says so in an Event with the time the restart took: the restart's end
// in the JobSet's timeline (the condition keeps upstream's message).
func recovered(e *statusEditor, attempt int32) {
	was := meta.FindStatusCondition(e.status.Conditions, string(api.JobSetRestartingJobSet))
	restarting := was != nil && was.Status == metav1.ConditionTrue
	var since time.Time
	if restarting {
		since = was.LastTransitionTime.Time
	}
	if e.set(api.JobSetRestartingJobSet, metav1.ConditionFalse, api.JobsReadyReason, api.JobsReadyMessage, "") && restarting {
		e.event(corev1.EventTypeNormal, api.JobsReadyReason, fmt.Sprintf("attempt %d: every job is ready again, %s after the restart began",
			attempt, e.now.Sub(since).Round(10*time.Millisecond)))
	}
}
