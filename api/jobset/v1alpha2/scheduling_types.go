package v1alpha2

import (
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
)

// JobSetScheduling is the Workload-Aware Scheduling configuration of a
// JobSet (KEP-969): the controller compiles it into one
// scheduling.k8s.io Workload and its PodGroups and points the child Jobs'
// pods at them, so that kube-scheduler binds each group's pods together.
// It is one of two models, never both: the JobSet as one group (the
// top-level schedulingPolicy, schedulingConstraints, disruptionMode) or a
// group per replicatedJobs entry, each ReplicatedJob targeted exactly once.
type JobSetScheduling struct {
	// SchedulingPolicy is the policy of the whole JobSet's group: gang (the
	// default when replicatedJobs is not set; minCount defaults to every pod
	// of the JobSet) or basic.
	// +optional
	SchedulingPolicy *SchedulingPolicy `json:"schedulingPolicy,omitempty"`

	// SchedulingConstraints are the whole JobSet's topology constraints.
	// +optional
	SchedulingConstraints *schedulingv1beta1.PodGroupSchedulingConstraints `json:"schedulingConstraints,omitempty"`

	// DisruptionMode says how the whole JobSet's group may be disrupted.
	// +optional
	DisruptionMode *schedulingv1beta1.DisruptionMode `json:"disruptionMode,omitempty"`

	// ReplicatedJobs are groups per ReplicatedJob (or per Job of one, with
	// job), in place of the top-level fields.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	ReplicatedJobs []ReplicatedJobScheduling `json:"replicatedJobs,omitempty"`
}

// ReplicatedJobScheduling is the group of the ReplicatedJobs it targets:
// one group shared by all their pods, or, with job, one group per Job.
type ReplicatedJobScheduling struct {
	// TargetReplicatedJobs name the ReplicatedJobs; several share one group.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:items:MaxLength=256
	TargetReplicatedJobs []string `json:"targetReplicatedJobs,omitempty"`

	// SchedulingPolicy of the shared group (default gang, minCount every pod
	// of the targeted ReplicatedJobs).
	// +optional
	SchedulingPolicy *SchedulingPolicy `json:"schedulingPolicy,omitempty"`

	// SchedulingConstraints of the shared group.
	// +optional
	SchedulingConstraints *schedulingv1beta1.PodGroupSchedulingConstraints `json:"schedulingConstraints,omitempty"`

	// DisruptionMode of the shared group.
	// +optional
	DisruptionMode *schedulingv1beta1.DisruptionMode `json:"disruptionMode,omitempty"`

	// ResourceClaims shared by the group's pods.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=4
	ResourceClaims []schedulingv1beta1.PodGroupResourceClaim `json:"resourceClaims,omitempty"`

	// Job makes every Job (replica) of the one targeted ReplicatedJob a
	// group of its own, as a TPU slice is, instead of one shared group; the
	// fields above are then not set.
	// +optional
	Job *JobScheduling `json:"job,omitempty"`
}

// JobScheduling is the group of each Job of a ReplicatedJob.
type JobScheduling struct {
	// SchedulingPolicy of each Job's group (default gang, minCount the Job's
	// parallelism).
	// +optional
	SchedulingPolicy *SchedulingPolicy `json:"schedulingPolicy,omitempty"`
	// +optional
	SchedulingConstraints *schedulingv1beta1.PodGroupSchedulingConstraints `json:"schedulingConstraints,omitempty"`
	// +optional
	DisruptionMode *schedulingv1beta1.DisruptionMode `json:"disruptionMode,omitempty"`
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=4
	ResourceClaims []schedulingv1beta1.PodGroupResourceClaim `json:"resourceClaims,omitempty"`
}

// SchedulingPolicy is a PodGroup's policy, exactly one of basic and gang,
// as scheduling.k8s.io's PodGroupSchedulingPolicy on the wire; a gang's
// minCount may be left out for the controller to count the pods.
type SchedulingPolicy struct {
	// +optional
	Basic *schedulingv1beta1.BasicSchedulingPolicy `json:"basic,omitempty"`
	// +optional
	Gang *GangPolicy `json:"gang,omitempty"`
}

// GangPolicy binds a group's pods all together or none.
type GangPolicy struct {
	// MinCount is how many of the group's pods must fit at once (default:
	// all of them).
	// +optional
	// +kubebuilder:validation:Minimum=1
	MinCount *int32 `json:"minCount,omitempty"`
}
