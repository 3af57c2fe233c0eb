// Package jobset is the JobSet controller's reconciler: it observes a
// JobSet and its children (observe.go), asks the pure policy.Decide what
// to do, and does it (act: child Jobs created and deleted in parallel, the
// headless Service, shared PVCs, one status write per reconcile); it feeds
// the caches decisions read (placement's domains, in-place pods).
package jobset

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/source"

	slicev1beta1 "github.com/multislice/multislice/api/accelerator/v1beta1"
	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/controller/jobset/policy"
	"github.com/multislice/multislice/internal/features"
	"github.com/multislice/multislice/internal/metrics"
	"github.com/multislice/multislice/internal/placement"
)

// OwnerUIDIndex indexes child Jobs by the UID of their controlling JobSet,
// so a JobSet recreated under the same name never sees its predecessor's Jobs.
const OwnerUIDIndex = ".metadata.controller.uid"

// Reconciler reconciles JobSets.
type Reconciler struct {
	Client client.Client
	// Recorder writes events.k8s.io Events, as upstream does.
	Recorder events.EventRecorder
	Gates    features.Gates
	// Parallelism bounds concurrent child-Job creates and deletes.
	Parallelism int
	// Domains is placement's cache of the cluster's topology domains: the
	// Jobs of exclusive-topology JobSets are pinned to domains of it; nil
	// leaves placement to the scheduler.
	Domains *placement.Cache
	// GroupLabel and SizeLabel are the node labels of a multislice group
	// (a Job that selects either must stay within one group).
	GroupLabel, SizeLabel string
	// HotSwap lets a recovering JobSet take the pools of lower-priority
	// ones when no free pool fits (policy/hotswap.go).
	HotSwap bool
	// CountsInterval batches status writes that only change Job counts
	// (replicatedJobsStatus) to one per interval per JobSet: a 1,000-Job
	// JobSet otherwise writes its status once per Job status change.
	CountsInterval time.Duration
	// AgentTimeout bounds an in-place restart that makes no progress
	// before it falls back to recreating (0: DefaultAgentTimeout).
	AgentTimeout time.Duration
	// Events reads the Job controller's FailedCreate events (a cache holding
	// only those, indexed by RegardingUIDIndex); nil leaves pod creation
	// unwatched.
	Events client.Reader
	// Clock is the one clock of the controller's decisions, its wakes and
	// its status-write spacing (nil: the real one).
	Clock     clock.WithDelayedExecution
	lastWrite sync.Map // JobSet namespace/name -> time.Time of the last status write
	// refused holds, per JobSet, the API server's refusal of the Jobs it
	// last created (refusedJobs), until they are created: the next
	// decision observes it. Memory only: a restarted manager learns it
	// again by trying.
	refused sync.Map
	// reserved are the cubes of Slices decided but not seen in the cache
	// yet, by Slice name.
	reservedMu sync.Mutex
	reserved   map[string]reservation
	// decide is policy.Decide, counted in tests.
	decide func(policy.Observed) policy.Plan
	// placing makes placement decisions one at a time: each sees the
	// domains the one before it reserved.
	placing       sync.Mutex
	domainsSynced func() bool
	// inPlace indexes the pods of in-place JobSets (InPlaceRestart gate).
	inPlace *inPlacePods
	// deleted are the Jobs deleted lately, not deleted again while the
	// cache catches up; created those created lately: their JobSet is not
	// decided on until the cache shows them.
	deleted recent[types.UID]
	created recent[createdJob]
	// replaced are the JobSet versions the manager's own status writes
	// replaced: a cache still showing one is behind the manager.
	replaced recent[jobSetVersion]
}

// SetupWithManager registers the controller and its index.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Parallelism == 0 {
		r.Parallelism = 100
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	err := mgr.GetFieldIndexer().IndexField(context.Background(), &batchv1.Job{}, OwnerUIDIndex, ownerJobSetUID)
	if err != nil {
		return err
	}
	if r.Events != nil {
		err := mgr.GetFieldIndexer().IndexField(context.Background(), &eventsv1.Event{}, RegardingUIDIndex, func(o client.Object) []string {
			return []string{string(o.(*eventsv1.Event).Regarding.UID)}
		})
		if err != nil {
			return err
		}
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&api.JobSet{}).
		Owns(&batchv1.Job{}).
		Owns(&corev1.Service{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers})
	if r.Domains != nil {
		// Waiting JobSets look again as soon as the domain cache sees
		// capacity free up (a JobSet releases its domains, a pinned Job or
		// a pod goes, a node becomes fit for work), once those changes pause
		// (wakes).
		wake, err := r.feedDomains(mgr)
		if err != nil {
			return err
		}
		b = b.WatchesRawSource(source.Channel(wake, (&wakes{clock: r.Clock}).handler()))
	}
	if r.slicing() {
		// A Slice is cluster-scoped, so its JobSet is named by labels, not
		// an owner reference; its Ready condition moves the JobSet along.
		b = b.Watches(&slicev1beta1.Slice{}, sliceOwner())
		if err := r.feedSlices(mgr); err != nil {
			return err
		}
	}
	if r.Gates.WorkloadAwareScheduling {
		b = b.Owns(&schedulingv1beta1.Workload{}).Owns(&schedulingv1beta1.PodGroup{})
	}
	if r.Gates.InPlaceRestart {
		// An agent's annotation or a container restart moves an in-place
		// restart along; nothing else of a pod does. The pods' facts are
		// indexed from the same events, so a reconcile reads no pod.
		r.inPlace = &inPlacePods{}
		b = b.Watches(&corev1.Pod{}, feedInPlace(r.inPlace, inPlaceBatch))
	}
	return b.Complete(r)
}

// inPlaceBatch is how long an in-place JobSet's pod changes gather before
// a reconcile reads them. They come in bursts of one per pod, and every
// reconcile reads the facts of every pod of the JobSet: reconciled per
// change, a restart of n pods costs O(n²); batched, at most one reconcile
// per period.
const inPlaceBatch = 50 * time.Millisecond

// Reconcile observes, decides and acts.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var js api.JobSet
	if err := r.Client.Get(ctx, req.NamespacedName, &js); err != nil {
		if apierrors.IsNotFound(err) {
			r.lastWrite.Delete(req.NamespacedName)
			r.refused.Delete(req.NamespacedName)
			if r.Domains != nil {
				r.Domains.Release(req.NamespacedName.String())
			}
			if err := r.releaseSlicesOf(ctx, req.NamespacedName); err != nil {
				return ctrl.Result{}, err
			}
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if js.DeletionTimestamp != nil || !ManagedByUs(&js) {
		return ctrl.Result{}, nil
	}
	if r.replaced.within(jobSetVersion{js.UID, js.ResourceVersion}, r.Clock.Now()) {
		// The cache shows the JobSet from before this manager's own last
		// status write: decided on it, a reconcile would undo that write
		// (create again the Jobs it released). The write's watch event
		// requeues the JobSet; the requeue is only a backstop.
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	observed, err := r.observe(ctx, &js)
	if err != nil {
		return ctrl.Result{}, err
	}
	if r.created.anyWithin(func(k createdJob) bool { return k.jobSet == js.UID }, observed.Now) {
		// The cache does not show yet a Job this manager created: decided
		// on it, a reconcile would place that Job again (reserve a second
		// domain for it) and create it again. The Job's watch event
		// requeues the JobSet; the requeue is a backstop, and the memory's
		// end covers a Job gone before the cache ever showed it.
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	plan, err := r.decideAll(ctx, &js, observed)
	if errors.Is(err, errDomainsNotSynced) {
		return ctrl.Result{RequeueAfter: 100 * time.Millisecond}, nil
	} else if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.act(ctx, &js, &plan); err != nil {
		if onlyConflicts(err) {
			// The cache is behind the server: the watch event that brings
			// it up to date requeues the JobSet. Not a failure to back off
			// from (exponentially: seconds after a burst of conflicts).
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: plan.RequeueAfter}, nil
}

// ownerJobSetUID indexes a Job by the UID of the JobSet that controls it.
func ownerJobSetUID(o client.Object) []string {
	if ref := metav1.GetControllerOf(o); ref != nil && ref.Kind == "JobSet" && ref.APIVersion == api.GroupVersion.String() {
		return []string{string(ref.UID)}
	}
	return nil
}

// onlyConflicts: every error err joins or wraps is a write conflict.
func onlyConflicts(err error) bool {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			if !onlyConflicts(e) {
				return false
			}
		}
		return len(joined.Unwrap()) > 0
	}
	return apierrors.IsConflict(err)
}

// decideAll decides, and remembers what placement's memory must change.
// A decision that would place Jobs asks for a snapshot of their domains
// (policy.Plan.NeedsSnapshot): it is decided again with one, under the placing
// lock, so decisions that place are taken one at a time, each seeing the
// reservations of the one before. The many reconciles that place nothing
// (a Job's counts changed) decide once, read no snapshot and take no lock.
func (r *Reconciler) decideAll(ctx context.Context, js *api.JobSet, o policy.Observed) (policy.Plan, error) {
	decide := r.decide
	if decide == nil {
		decide = policy.Decide
	}
	plan := decide(o)
	if len(plan.NeedsSnapshot) > 0 || plan.NeedsCubes {
		r.placing.Lock()
		defer r.placing.Unlock()
		// A decision given the domains may find it forms Slices too, or
		// the other way round: each is supplied once.
		for len(plan.NeedsSnapshot) > 0 && o.Placement == nil || plan.NeedsCubes && o.Slices.Cubes == nil ||
			plan.NeedsHolders && o.Placement.Holders == nil {
			var err error
			if len(plan.NeedsSnapshot) > 0 && o.Placement == nil {
				if o.Placement, err = r.observePlacement(ctx, js, plan.NeedsSnapshot); err != nil {
					return policy.Plan{}, err
				}
			} else if plan.NeedsHolders && o.Placement.Holders == nil {
				in := *o.Placement
				if in.Holders, err = r.observeHolders(ctx, &in); err != nil {
					return policy.Plan{}, err
				}
				o.Placement = &in
			}
			if plan.NeedsCubes && o.Slices.Cubes == nil {
				slices := *o.Slices
				if slices.Cubes, err = r.observeCubes(ctx, js); err != nil {
					return policy.Plan{}, err
				}
				o.Slices = &slices
			}
			plan = decide(o)
		}
		r.reserve(&plan)
	}
	r.remember(js, &plan)
	return plan, nil
}

// ManagedByUs: managedBy is unset or names the built-in controller.
func ManagedByUs(js *api.JobSet) bool {
	m := ptr.Deref(js.Spec.ManagedBy, "")
	return m == "" || m == api.JobSetControllerName
}

func (r *Reconciler) act(ctx context.Context, js *api.JobSet, p *policy.Plan) error {
	var errs []error
	errs = append(errs, parallel(ctx, r.Parallelism, "job", p.Delete, func(j *batchv1.Job) error {
		if r.deleted.within(j.UID, r.Clock.Now()) {
			return nil
		}
		if p.DeletePodsGrace != nil {
			pods := &corev1.Pod{}
			err := r.Client.DeleteAllOf(ctx, pods, client.InNamespace(j.Namespace),
				client.MatchingLabels{api.LegacyJobNameLabel: j.Name}, client.GracePeriodSeconds(*p.DeletePodsGrace))
			if err != nil {
				return fmt.Errorf("delete pods: %w", err)
			}
		}
		err := r.Client.Delete(ctx, j, client.PropagationPolicy(metav1.DeletePropagationForeground))
		if err == nil {
			r.deleted.note(j.UID, r.Clock.Now())
		}
		return client.IgnoreNotFound(err)
	}))
	for _, pvc := range p.Claims {
		if err := r.Client.Create(ctx, pvc); err != nil && !apierrors.IsAlreadyExists(err) {
			r.event(js, corev1.EventTypeWarning, api.PVCCreationFailedReason, err.Error())
			errs = append(errs, err)
		}
	}
	if err := r.actSlices(ctx, js, p); err != nil {
		errs = append(errs, err)
	}
	if p.EvictFromKueue != "" {
		if err := r.evictFromKueue(ctx, js, p.EvictFromKueue); err != nil {
			// The restart waits too: written, it would end the mark's attempt
			// and no later decision would evict.
			return errors.Join(append(errs, err)...)
		}
	}
	if err := r.markVictims(ctx, js, p.HotSwap); err != nil {
		// Its Jobs wait: pinned to pools whose JobSet does not know it must
		// leave, they would wait for ever.
		return errors.Join(append(errs, err)...)
	}
	if err := r.actScheduling(ctx, js, p); err != nil {
		// The Jobs wait for their groups: pods with no PodGroup would not schedule.
		r.event(js, corev1.EventTypeWarning, api.JobCreationFailedReason, err.Error())
		return errors.Join(append(errs, err)...)
	}
	// The headless Service beside the Jobs, not before them: their pods
	// resolve each other through it only once they run.
	serviceErr := make(chan error, 1)
	go func() { serviceErr <- r.createService(ctx, js, p.Service) }()
	createErr := parallel(ctx, r.Parallelism, "job", p.Create, func(j *batchv1.Job) error {
		err := r.Client.Create(ctx, j)
		if err == nil {
			r.created.note(createdJob{client.ObjectKeyFromObject(j), js.UID}, r.Clock.Now())
		}
		return client.IgnoreAlreadyExists(err)
	})
	errs = append(errs, <-serviceErr)
	if createErr != nil {
		r.event(js, corev1.EventTypeWarning, api.JobCreationFailedReason, createErr.Error())
		errs = append(errs, createErr)
	}
	r.noteCreation(js, len(p.Create), createErr)
	errs = append(errs, r.updateJobs(ctx, p))
	if p.StatusChanged {
		before := js.Status.DeepCopy()
		js.Status = p.Status
		replaced := jobSetVersion{js.UID, js.ResourceVersion}
		if err := r.Client.Status().Update(ctx, js); err != nil {
			return errors.Join(append(errs, fmt.Errorf("update status: %w", err))...)
		}
		if js.ResourceVersion != replaced.resourceVersion { // a write that changed nothing keeps it
			r.replaced.note(replaced, r.Clock.Now())
		}
		r.lastWrite.Store(client.ObjectKeyFromObject(js), r.Clock.Now())
		for _, e := range p.Events {
			r.event(js, e.Type, e.Reason, e.Message)
		}
		metrics.ObserveJobSetStatus(js, before, r.Clock.Now())
	}
	if p.DeleteJobSet {
		err := r.Client.Delete(ctx, js, client.PropagationPolicy(metav1.DeletePropagationForeground))
		errs = append(errs, client.IgnoreNotFound(err))
	}
	return errors.Join(errs...)
}

// createService creates the JobSet's headless Service, if the plan has one.
func (r *Reconciler) createService(ctx context.Context, js *api.JobSet, svc *corev1.Service) error {
	if svc == nil {
		return nil
	}
	if err := r.Client.Create(ctx, svc); err != nil && !apierrors.IsAlreadyExists(err) {
		r.event(js, corev1.EventTypeWarning, api.HeadlessServiceCreationFailedReason, err.Error())
		return err
	}
	return nil
}

// updateJobs rescales, suspends and resumes the plan's existing Jobs.
func (r *Reconciler) updateJobs(ctx context.Context, p *policy.Plan) error {
	scale := parallel(ctx, r.Parallelism, "job", p.Scale, func(j *batchv1.Job) error {
		patch := fmt.Sprintf(`{"spec":{"parallelism":%d,"completions":%d}}`, *j.Spec.Parallelism, *j.Spec.Completions)
		return r.Client.Patch(ctx, j, client.RawPatch(types.MergePatchType, []byte(patch)))
	})
	suspend := parallel(ctx, r.Parallelism, "job", p.Suspend, func(j *batchv1.Job) error {
		j = j.DeepCopy()
		j.Spec.Suspend = ptr.To(true)
		return r.Client.Update(ctx, j)
	})
	resume := parallel(ctx, r.Parallelism, "job", p.Resume, func(j *batchv1.Job) error {
		if j.Status.StartTime != nil {
			// A resumed Job must start its clock afresh (the API requires it).
			j.Status.StartTime = nil
			if err := r.Client.Status().Update(ctx, j); err != nil {
				return err
			}
		}
		return r.Client.Update(ctx, j)
	})
	return errors.Join(scale, suspend, resume)
}

// parallel runs f on every object, n at a time; each error names the
// object's kind and name.
func parallel[T client.Object](ctx context.Context, n int, kind string, objs []T, f func(T) error) error {
	if len(objs) == 0 {
		return nil
	}
	errs := make([]error, len(objs))
	workqueue.ParallelizeUntil(ctx, n, len(objs), func(i int) {
		if err := f(objs[i]); err != nil {
			errs[i] = fmt.Errorf("%s %s: %w", kind, objs[i].GetName(), err)
		}
	})
	return errors.Join(errs...)
}

func (r *Reconciler) event(js *api.JobSet, typ, reason, msg string) {
	if r.Recorder != nil {
		// The reference leaves out the resourceVersion: with it, every
		// status write would start a new Event instead of continuing the
		// series of a warning that repeats (e.g. JobCreationFailed).
		regarding := &api.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: js.Namespace, Name: js.Name, UID: js.UID}}
		r.Recorder.Eventf(regarding, nil, typ, reason, "Reconciling", "%s", msg)
	}
}
