// Package policy is the JobSet controller's whole policy as a pure
// function: Decide turns what a reconcile observed (Observed) into what it
// should do (Plan), through a declared list of stages. It reads no clock
// and no API: the reconciler (package jobset) observes, acts and feeds
// the caches; this package imports neither client-go nor controller-runtime.
package policy

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"

	slicev1beta1 "github.com/multislice/multislice/api/accelerator/v1beta1"
	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/features"
	"github.com/multislice/multislice/internal/placement"
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
	// Places: the manager places exclusive-topology Jobs (it has a domain
	// cache); off, the scheduler alone places them.
	Places bool
	// Placement is the snapshot placing the JobSet's Jobs needs, supplied
	// when the decision without it asked (Plan.NeedsSnapshot).
	Placement *Placement
	// Slices are the JobSet's dynamic slices and, when asked for, the
	// cubes they form from (nil: the manager forms no slices).
	Slices *SliceObservation
	// JobsRefused is the API server's refusal of the Jobs the last
	// decision created (nil: none, or they were created since).
	JobsRefused *JobRefusal
	// LastStatusWrite is when this JobSet's status was last written;
	// status writes that change only counts wait CountsInterval after it.
	LastStatusWrite time.Time
	CountsInterval  time.Duration
	// Scheduling is what exists of the JobSet's Workload and PodGroups
	// (nil: the gate is off or spec.scheduling is not set).
	Scheduling *SchedulingObjects
}

// Plan is what a reconcile should do, decided by Decide from Observed
// alone; nothing changes it after.
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
	// NeedsSnapshot: the plan creates or resumes Jobs placed by these
	// exclusive keys and was decided without a snapshot of their domains;
	// decide again with Observed.Placement. Nothing else of it is final.
	NeedsSnapshot []string
	// CreateSlices are formed for Jobs that start once they are Ready;
	// DeleteSlices (names) are let go: the JobSet finished or is
	// suspended, or they failed and are formed again.
	CreateSlices []*slicev1beta1.Slice
	DeleteSlices []string
	// NeedsCubes: the plan would form Slices and was decided without the
	// cubes; decide again with Observed.Slices.Cubes, like NeedsSnapshot.
	NeedsCubes bool
	// HotSwap are the JobSets whose pools this plan takes (they are marked
	// before its Jobs are created); NeedsHolders: the plan would hot-swap
	// and was decided without the holders' facts (Placement.Holders).
	HotSwap      []Victim
	NeedsHolders bool
	// EvictFromKueue, when set, evicts the JobSet's Kueue Workload with
	// this message (a hot-swap took the pools of a JobSet in a Kueue
	// queue): Kueue suspends it, releases its quota and requeues it.
	EvictFromKueue string
	// DeleteJobSet: the TTL after finishing has expired.
	DeleteJobSet bool
	RequeueAfter time.Duration
}
