package v1alpha2

// Label and annotation keys. The controller writes every key of the first
// block both as a label and as an annotation on each child Job and its pod
// template, exactly as upstream does.
const (
	JobSetNameKey         = "jobset.sigs.k8s.io/jobset-name"
	JobSetUIDKey          = "jobset.sigs.k8s.io/jobset-uid"
	ReplicatedJobNameKey  = "jobset.sigs.k8s.io/replicatedjob-name"
	ReplicatedJobReplicas = "jobset.sigs.k8s.io/replicatedjob-replicas"
	// GlobalReplicasKey is the sum of replicas over all replicated jobs.
	GlobalReplicasKey = "jobset.sigs.k8s.io/global-replicas"
	// JobIndexKey is the Job's index within its replicated job.
	JobIndexKey = "jobset.sigs.k8s.io/job-index"
	// JobGlobalIndexKey numbers every Job of the JobSet, replicated jobs in spec order.
	JobGlobalIndexKey = "jobset.sigs.k8s.io/job-global-index"
	// JobKey is the SHA-1 hex digest of "<namespace>/<job name>" (upstream's
	// comment says SHA256; its code, and ours, use SHA-1).
	JobKey = "jobset.sigs.k8s.io/job-key"
	// RestartsKey is status.restarts when the Job was created: pods use it
	// to know which attempt they belong to.
	RestartsKey = "jobset.sigs.k8s.io/restart-attempt"
	// JobRestartsKey is the Job's own restart count (RestartJob gate).
	JobRestartsKey   = "jobset.sigs.k8s.io/job-restart-attempt"
	GroupNameKey     = "jobset.sigs.k8s.io/group-name"
	GroupReplicasKey = "jobset.sigs.k8s.io/group-replicas"
	JobGroupIndexKey = "jobset.sigs.k8s.io/job-group-index"
	// CoordinatorKey is the stable endpoint of the coordinator pod.
	CoordinatorKey = "jobset.sigs.k8s.io/coordinator"
)

// Annotations a user sets on the JobSet or a replicated job's template.
const (
	// ExclusiveKey asks for one topology domain (the value names the node
	// label, e.g. cloud.google.com/gke-nodepool) per child Job.
	ExclusiveKey = "alpha.jobset.sigs.k8s.io/exclusive-topology"
	// NodeSelectorStrategyKey switches exclusive placement to pre-labelled
	// nodes; its value is ignored.
	NodeSelectorStrategyKey = "alpha.jobset.sigs.k8s.io/node-selector"
	NamespacedJobKey        = "alpha.jobset.sigs.k8s.io/namespaced-job"
	NoScheduleTaintKey      = "alpha.jobset.sigs.k8s.io/no-schedule"
	// PriorityKey is a pod label carrying the pod's priority.
	PriorityKey = "jobset.sigs.k8s.io/priority"
	// InPlaceRestartAttemptKey and DisableInPlaceRestartKey belong to the
	// in-place restart agent (InPlaceRestart gate).
	InPlaceRestartAttemptKey = "jobset.sigs.k8s.io/in-place-restart-attempt"
	// ExecutionAttemptKey, a label and annotation on child Jobs and their
	// pods, is status.executionAttempts when the Job was created or resumed
	// (upstream KEP-1282), so logs of each start separate cleanly.
	ExecutionAttemptKey      = "jobset.sigs.k8s.io/execution-attempt"
	DisableInPlaceRestartKey = "jobset.sigs.k8s.io/disable-in-place-restart"
)

// JobSetControllerName is the managedBy value of the built-in controller;
// a JobSet with any other managedBy is left to that other controller.
const JobSetControllerName = "jobset.sigs.k8s.io/jobset-controller"

// Multislice's own extensions (not upstream keys).
const (
	// RestartGracePeriodAnnotation on a JobSet shortens the termination
	// grace of the old pods on a restart (seconds, e.g. "0"), for workloads
	// that checkpoint periodically and need no SIGTERM window. Unset: each
	// pod keeps its own grace period.
	RestartGracePeriodAnnotation = "multislice.dev/restart-grace-period-seconds"
	// HotSwapAnnotation "false" on a JobSet opts it out of hot-swap: it
	// never takes another's pools, and none are ever taken from it.
	HotSwapAnnotation = "multislice.dev/hot-swap"
	// HotSwappedByAnnotation and HotSwappedAttemptAnnotation are written
	// by the manager on a JobSet whose pools a hot-swap took: the taker
	// (namespace/name) and the attempt (status.restarts) it took them from.
	// That attempt restarts, not counting towards maxRestarts; a later
	// attempt is not touched.
	HotSwappedByAnnotation      = "multislice.dev/hot-swapped-by"
	HotSwappedAttemptAnnotation = "multislice.dev/hot-swapped-attempt"
)

// AssignedDomainAnnotation on a child Job names the topology domain (e.g.
// the node pool) slice-aware placement gave it (Multislice's own).
const AssignedDomainAnnotation = "multislice.dev/assigned-domain"

// Labels the Job API puts on a Job's pods besides batch/v1's prefixed
// ones (it writes both; older clusters only these).
const (
	LegacyJobNameLabel       = "job-name"
	LegacyControllerUIDLabel = "controller-uid"
)
