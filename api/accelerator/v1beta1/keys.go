package v1beta1

const (
	// ReadyCondition is the Slice's one condition.
	ReadyCondition = "Ready"
	// FailedReason is GKE's reason of a Slice that is not Ready because
	// a host of it failed or its partitions cannot form it.
	FailedReason = "FAILED"
	// ReadyReason is the reason of a Ready Slice (ours).
	ReadyReason = "Ready"
	// RetryOnFailureAnnotation asks that a failed Slice be formed again
	// from healthy partitions (GKE's). Slices of JobSets are, always.
	RetryOnFailureAnnotation = "slice.gke.io/retry-on-failure"
	// TPU7x is the one type dynamic slicing forms.
	TPU7x = "tpu7x"
	// MaxNameLength is GKE's bound on a Slice's name.
	MaxNameLength = 49
)

// Labels Multislice puts on the Slices it forms for a JobSet's Jobs: the
// owner's namespace, name and UID (a cluster-scoped Slice cannot have a
// namespaced owner reference) and the Job.
const (
	JobSetNamespaceLabel = "slice.multislice.dev/jobset-namespace"
	JobSetNameLabel      = "slice.multislice.dev/jobset-name"
	JobSetUIDLabel       = "slice.multislice.dev/jobset-uid"
	JobNameLabel         = "slice.multislice.dev/job-name"
)

// PartitionPositionLabel is the node label (ours) giving a sub-block's
// position in its block's grid of sub-blocks, "x.y.z" (cubes along each
// axis), from which adjacency follows: GKE's slice controller knows the
// physical layout; a simulated fleet says it.
const PartitionPositionLabel = "multislice.dev/partition-position"

// HostPositionLabel is the node label (ours) giving a host's position in
// its sub-block's 2x2x4 grid of hosts, "x.y.z": a sub-slice is a box of
// them.
const HostPositionLabel = "multislice.dev/host-position"

// QuartersAnnotation (ours) names, on a sub-slice's Slice, the quarters
// of its one partition it holds ("0", "1,3"): quarter q is the column of
// hosts at x = q mod 2, y = q / 2. Two sub-slices of a partition hold
// different quarters.
const QuartersAnnotation = "slice.multislice.dev/quarters"

// AdmissionCheckControllerName is GKE's name of the slice controller as a
// Kueue admission check (AdmissionCheck spec.controllerName): a Workload
// of a ClusterQueue with such a check is admitted once its Slices are
// formed, from the hosts Kueue's topology-aware scheduling chose, and Ready.
const AdmissionCheckControllerName = "accelerator.gke.io/slice"

// WorkloadAnnotation (ours) names, on a Slice the admission check formed,
// the Kueue Workload it was formed for: the check owns it until the
// Workload is admitted, and the JobSet controller does not form it again
// on failure (Kueue requeues the Workload, and its new hosts make new
// Slices).
const WorkloadAnnotation = "slice.multislice.dev/kueue-workload"
