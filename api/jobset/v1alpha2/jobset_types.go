package v1alpha2

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// JobSetSpec is the desired state of a JobSet.
// +kubebuilder:validation:XValidation:rule="!(has(self.startupPolicy) && self.startupPolicy.startupPolicyOrder == 'InOrder' && self.replicatedJobs.exists(x, has(x.dependsOn)))",message="StartupPolicy and DependsOn APIs are mutually exclusive"
type JobSetSpec struct {
	// replicatedJobs are the groups of identical Jobs that make up the set.
	// +patchMergeKey=name
	// +patchStrategy=merge
	// +listType=map
	// +listMapKey=name
	ReplicatedJobs []ReplicatedJob `json:"replicatedJobs,omitempty" patchStrategy:"merge" patchMergeKey:"name"`

	// network configures pod DNS: a headless Service and pod subdomains.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Value is immutable"
	// +optional
	Network *Network `json:"network,omitempty"`

	// successPolicy says which Jobs must complete for the JobSet to
	// complete. Without it, every Job must complete.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Value is immutable"
	SuccessPolicy *SuccessPolicy `json:"successPolicy,omitempty"`

	// failurePolicy says what happens when a Job fails. Without it, the
	// first failed Job fails the JobSet.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Value is immutable"
	FailurePolicy *FailurePolicy `json:"failurePolicy,omitempty"`

	// startupPolicy orders the start of replicated jobs.
	// Deprecated: use dependsOn on the replicated jobs instead.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Value is immutable"
	StartupPolicy *StartupPolicy `json:"startupPolicy,omitempty"`

	// suspend, when true, suspends every child Job; false resumes them.
	Suspend *bool `json:"suspend,omitempty"` //nolint

	// coordinator names one pod whose stable address is published on every
	// Job and pod as the jobset.sigs.k8s.io/coordinator label and annotation.
	// +optional
	Coordinator *Coordinator `json:"coordinator,omitempty"`

	// managedBy names the controller that reconciles this JobSet. Empty or
	// jobset.sigs.k8s.io/jobset-controller means the built-in one; any other
	// value (a domain-prefixed path of at most 63 characters) makes the
	// built-in controller leave the JobSet alone. Immutable.
	// +optional
	ManagedBy *string `json:"managedBy,omitempty"`

	// ttlSecondsAfterFinished deletes the JobSet this many seconds after it
	// completes or fails; unset keeps it forever, 0 deletes it at once.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`

	// volumeClaimPolicies declares PersistentVolumeClaims shared by the
	// JobSet's pods; the controller creates them (named
	// <template name>-<jobset name>) and mounts them where a container asks.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Value is immutable"
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	VolumeClaimPolicies []VolumeClaimPolicy `json:"volumeClaimPolicies,omitempty"`

	// activeDeadlineSeconds bounds how long the JobSet may run, counted
	// from status.startTime (KEP-1186, gate JobSetActiveDeadlineSeconds):
	// past it every child Job is stopped and the JobSet fails with reason
	// DeadlineExceeded. Time suspended does not count; restarts do.
	// +kubebuilder:validation:Minimum=1
	// +optional
	// +featureGate=JobSetActiveDeadlineSeconds
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// scheduling is the Workload-Aware Scheduling configuration (KEP-969,
	// gate JobSetWorkloadAwareSchedulingAPI): the controller makes one
	// scheduling.k8s.io Workload and its PodGroups and points the child
	// Jobs' pods at them, so that kube-scheduler gangs them. Nil: none.
	// Immutable while the JobSet runs (not suspended).
	// +optional
	// +featureGate=JobSetWorkloadAwareSchedulingAPI
	Scheduling *JobSetScheduling `json:"scheduling,omitempty"`
}

// JobSetStatus is the observed state of a JobSet.
type JobSetStatus struct {
	// conditions: Completed, Failed, Suspended, RestartingJobSet,
	// StartupPolicyInProgress, StartupPolicyCompleted.
	// +optional
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// restarts counts whole-JobSet restarts (every Job recreated), by
	// RestartJobSet or RestartJobSetAndIgnoreMaxRestarts. Always serialized.
	// +optional
	Restarts int32 `json:"restarts"`

	// restartsCountTowardsMax counts the restarts that count against
	// failurePolicy.maxRestarts (those of RestartJobSet).
	// +optional
	RestartsCountTowardsMax int32 `json:"restartsCountTowardsMax,omitempty"`

	// infrastructureRestarts counts the restarts the infrastructure caused
	// (a failed slice, a hot-swap, maintenance): with the RestartBudgets
	// gate they count neither against maxRestarts nor against a replicated
	// job's budget, only against failurePolicy.maxInfrastructureRestarts.
	// +optional
	InfrastructureRestarts int32 `json:"infrastructureRestarts,omitempty"`

	// terminalState is Completed or Failed once the JobSet has finished.
	// +optional
	TerminalState string `json:"terminalState,omitempty"`

	// replicatedJobsStatus counts the Jobs of each replicated job by state,
	// for the current restart attempt.
	// +optional
	// +patchMergeKey=name
	// +patchStrategy=merge
	// +listType=map
	// +listMapKey=name
	ReplicatedJobsStatus []ReplicatedJobStatus `json:"replicatedJobsStatus,omitempty" patchStrategy:"merge" patchMergeKey:"name"`

	// previousInPlaceRestartAttempt is read by the in-place restart agent
	// (InPlaceRestart gate).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +featureGate=InPlaceRestart
	PreviousInPlaceRestartAttempt *int32 `json:"previousInPlaceRestartAttempt,omitempty"`

	// currentInPlaceRestartAttempt is read by the in-place restart agent
	// (InPlaceRestart gate).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +featureGate=InPlaceRestart
	CurrentInPlaceRestartAttempt *int32 `json:"currentInPlaceRestartAttempt,omitempty"`

	// executionAttempts counts the JobSet's starts: 0 for the first, one
	// more for each restart of every Job and each resume after a suspend
	// (upstream KEP-1282). Unset until the JobSet first runs. Child Jobs and
	// pods carry it as jobset.sigs.k8s.io/execution-attempt.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ExecutionAttempts *int32 `json:"executionAttempts,omitempty"`

	// startTime is when the JobSet last started running: set when it
	// first runs and when it resumes, cleared while it is suspended, kept
	// across restarts. spec.activeDeadlineSeconds counts from it
	// (JobSetActiveDeadlineSeconds gate; unset with the gate off).
	// +optional
	// +featureGate=JobSetActiveDeadlineSeconds
	StartTime *metav1.Time `json:"startTime,omitempty"`
}

// ReplicatedJobStatus counts the Jobs of one replicated job.
type ReplicatedJobStatus struct {
	// name of the replicated job.
	Name string `json:"name"`

	// ready counts Jobs whose ready plus succeeded pods reach
	// min(parallelism, completions).
	Ready int32 `json:"ready"`

	// succeeded counts completed Jobs.
	Succeeded int32 `json:"succeeded"`

	// failed counts failed Jobs.
	Failed int32 `json:"failed"`

	// active counts Jobs with at least one pending or running pod.
	Active int32 `json:"active"`

	// suspended counts suspended Jobs.
	Suspended int32 `json:"suspended"`

	// jobRestarts[i] counts single-Job restarts of Job i (RestartJob gate).
	// +kubebuilder:validation:MaxItems=1024
	// +listType=atomic
	// +optional
	JobRestarts []int32 `json:"jobRestarts,omitempty"`

	// jobRestartsCountTowardsMax[i] counts those of Job i that count
	// against maxRestarts (RestartJob gate).
	// +kubebuilder:validation:MaxItems=1024
	// +listType=atomic
	// +optional
	JobRestartsCountTowardsMax []int32 `json:"jobRestartsCountTowardsMax,omitempty"`

	// restartsCountTowardsMax counts the counted restarts of the whole
	// JobSet this replicated job's failures caused (RestartBudgets gate).
	// +optional
	RestartsCountTowardsMax int32 `json:"restartsCountTowardsMax,omitempty"`
}

// JobSet runs groups of Jobs as one workload: a multislice training run is
// one JobSet whose child Jobs each run on one slice.
// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=js
// +kubebuilder:printcolumn:name="TerminalState",JSONPath=".status.terminalState",type=string,description="Final state of JobSet"
// +kubebuilder:printcolumn:name="Restarts",JSONPath=".status.restarts",type=string,description="Number of restarts"
// +kubebuilder:printcolumn:name="Completed",type="string",priority=0,JSONPath=".status.conditions[?(@.type==\"Completed\")].status"
// +kubebuilder:printcolumn:name="Suspended",type="string",JSONPath=".spec.suspend",description="JobSet suspended"
// +kubebuilder:printcolumn:name="Age",JSONPath=".metadata.creationTimestamp",type=date,description="Time this JobSet was created"
type JobSet struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// spec is the desired state.
	Spec JobSetSpec `json:"spec,omitempty"`
	// status is the observed state.
	Status JobSetStatus `json:"status,omitempty"`
}

// JobSetList is a list of JobSets.
// +kubebuilder:object:root=true
type JobSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []JobSet `json:"items"`
}

// ReplicatedJob is a Job template stamped out replicas times.
type ReplicatedJob struct {
	// name of the replicated job; child Jobs are named
	// <jobset>-<name>-<index>.
	Name string `json:"name"`

	// groupName puts the replicated job in a group (default "default");
	// Jobs get group-name, group-replicas and job-group-index keys.
	// +kubebuilder:default=default
	GroupName string `json:"groupName,omitempty"`

	// template of each child Job.
	Template batchv1.JobTemplateSpec `json:"template"`

	// replicas is the number of child Jobs.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	Replicas int32 `json:"replicas,omitempty"`

	// dependsOn delays this replicated job until earlier ones reach a
	// status (Ready or Complete). The first replicated job cannot use it,
	// and it excludes startupPolicy InOrder.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Value is immutable"
	// +kubebuilder:validation:MaxItems=5
	// +optional
	// +patchMergeKey=name
	// +patchStrategy=merge
	// +listType=map
	// +listMapKey=name
	DependsOn []DependsOn `json:"dependsOn,omitempty" patchStrategy:"merge" patchMergeKey:"name"`

	// failurePolicy is this replicated job's own restart budget
	// (Multislice's, RestartBudgets gate; kubernetes-sigs/jobset #1129 B).
	// +optional
	FailurePolicy *ReplicatedJobFailurePolicy `json:"failurePolicy,omitempty"`
}

// ReplicatedJobFailurePolicy bounds the restarts one replicated job causes.
type ReplicatedJobFailurePolicy struct {
	// maxRestarts bounds the counted restarts caused by a failure of this
	// replicated job's Jobs (replicatedJobsStatus[].restartsCountTowardsMax);
	// past it the JobSet fails, naming the replicated job. Failures of
	// other replicated jobs, and of the infrastructure, do not use it up.
	// +kubebuilder:validation:Minimum=0
	MaxRestarts int32 `json:"maxRestarts"`
}

// DependsOn names an earlier replicated job and the status to wait for.
type DependsOn struct {
	// name of the earlier replicated job.
	Name string `json:"name"`

	// status to wait for: Ready or Complete.
	// +kubebuilder:validation:Enum=Ready;Complete
	Status DependsOnStatus `json:"status"`
}

// DependsOnStatus is the status a dependency must reach.
type DependsOnStatus string

const (
	// DependencyReady: every Job of the dependency is ready, succeeded or failed.
	DependencyReady DependsOnStatus = "Ready"
	// DependencyComplete: every Job of the dependency succeeded.
	DependencyComplete DependsOnStatus = "Complete"
)

// Network configures the JobSet's DNS.
type Network struct {
	// enableDNSHostnames makes pods reachable as
	// <jobset>-<replicated job>-<job index>-<pod index>.<subdomain>.
	// +optional
	EnableDNSHostnames *bool `json:"enableDNSHostnames,omitempty"` //nolint

	// subdomain of the pods and name of the headless Service; defaults to
	// the JobSet name.
	// +optional
	Subdomain string `json:"subdomain,omitempty"`

	// publishNotReadyAddresses publishes DNS records before pods are
	// ready (default true), so workers can find each other while starting.
	// +optional
	PublishNotReadyAddresses *bool `json:"publishNotReadyAddresses,omitempty"` //nolint
}

// Operator says whether all or any targeted Jobs must succeed.
type Operator string

const (
	// OperatorAll: every targeted Job.
	OperatorAll Operator = "All"
	// OperatorAny: at least one targeted Job.
	OperatorAny Operator = "Any"
)

// FailurePolicyAction is what the controller does when a rule matches.
type FailurePolicyAction string

const (
	// FailJobSet fails the JobSet at once.
	FailJobSet FailurePolicyAction = "FailJobSet"
	// RestartJobSet recreates every Job if restarts remain under
	// maxRestarts, and fails the JobSet otherwise.
	RestartJobSet FailurePolicyAction = "RestartJobSet"
	// RestartJobSetAndIgnoreMaxRestarts recreates every Job without
	// counting against maxRestarts.
	RestartJobSetAndIgnoreMaxRestarts FailurePolicyAction = "RestartJobSetAndIgnoreMaxRestarts"
	// RestartJob recreates only the failed Job, counting against
	// maxRestarts (RestartJob gate; replicas at most 1024).
	RestartJob FailurePolicyAction = "RestartJob"
	// RestartJobAndIgnoreMaxRestarts recreates only the failed Job without
	// counting (RestartJob gate).
	RestartJobAndIgnoreMaxRestarts FailurePolicyAction = "RestartJobAndIgnoreMaxRestarts"
)

// FailurePolicyRule maps a kind of Job failure to an action. Rules are
// tried in order; the first whose reasons, message patterns and targets all
// match decides.
type FailurePolicyRule struct {
	// name of the rule (default failurePolicyRule<index>); it must match
	// ^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$ and be unique.
	Name string `json:"name"`
	// action to take when the rule matches.
	// +kubebuilder:validation:Enum:=FailJobSet;RestartJobSet;RestartJobSetAndIgnoreMaxRestarts;RestartJob;RestartJobAndIgnoreMaxRestarts
	Action FailurePolicyAction `json:"action"`
	// onJobFailureReasons matches the reason of the Job's Failed
	// condition; empty matches any reason.
	// +kubebuilder:validation:UniqueItems:true
	OnJobFailureReasons []string `json:"onJobFailureReasons,omitempty"`
	// onJobFailureMessagePatterns are RE2 regular expressions matched
	// against the message of the Job's Failed condition; empty matches any.
	// +kubebuilder:validation:UniqueItems:true
	OnJobFailureMessagePatterns []string `json:"onJobFailureMessagePatterns,omitempty"`
	// targetReplicatedJobs limits the rule to Jobs of these replicated
	// jobs; empty means all.
	// +optional
	// +listType=atomic
	TargetReplicatedJobs []string `json:"targetReplicatedJobs,omitempty"`
}

// FailurePolicy configures restarts.
type FailurePolicy struct {
	// maxRestarts bounds the restarts that count (see RestartJobSet).
	MaxRestarts int32 `json:"maxRestarts,omitempty"`

	// restartStrategy is how a restart recreates Jobs (default Recreate).
	// +optional
	// +kubebuilder:default=Recreate
	RestartStrategy JobSetRestartStrategy `json:"restartStrategy,omitempty"`

	// rules, tried in order; when none matches, RestartJobSet applies.
	Rules []FailurePolicyRule `json:"rules,omitempty"`

	// maxInfrastructureRestarts bounds the restarts the infrastructure
	// causes (status.infrastructureRestarts; RestartBudgets gate). Unset:
	// unlimited, a failing cloud never fails the JobSet by itself.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxInfrastructureRestarts *int32 `json:"maxInfrastructureRestarts,omitempty"`
}

// JobSetRestartStrategy is how a restart recreates the Jobs.
// +kubebuilder:validation:Enum=Recreate;BlockingRecreate;InPlaceRestart
type JobSetRestartStrategy string

const (
	// Recreate recreates each Job as soon as its previous incarnation is gone.
	Recreate JobSetRestartStrategy = "Recreate"
	// BlockingRecreate creates no new Job until every old Job and its pods
	// are gone, so two attempts never overlap.
	BlockingRecreate JobSetRestartStrategy = "BlockingRecreate"
	// InPlaceRestart restarts healthy pods in place (InPlaceRestart gate).
	InPlaceRestart JobSetRestartStrategy = "InPlaceRestart"
)

// SuccessPolicy says when the JobSet has succeeded.
type SuccessPolicy struct {
	// operator: All or Any of the targeted Jobs must succeed.
	// +kubebuilder:validation:Enum=All;Any
	Operator Operator `json:"operator"`

	// targetReplicatedJobs limits the policy to these replicated jobs;
	// empty means all.
	// +optional
	// +listType=atomic
	TargetReplicatedJobs []string `json:"targetReplicatedJobs,omitempty"`
}

// StartupPolicyOptions orders replicated-job startup.
type StartupPolicyOptions string

const (
	// AnyOrder starts every replicated job at once (the default).
	AnyOrder StartupPolicyOptions = "AnyOrder"
	// InOrder starts each replicated job once the previous one is ready.
	InOrder StartupPolicyOptions = "InOrder"
)

// StartupPolicy orders replicated-job startup.
type StartupPolicy struct {
	// startupPolicyOrder: AnyOrder or InOrder.
	// +kubebuilder:validation:Enum=AnyOrder;InOrder
	StartupPolicyOrder StartupPolicyOptions `json:"startupPolicyOrder"`
}

// Coordinator names the pod that coordinates the workload.
type Coordinator struct {
	// replicatedJob that holds the coordinator pod.
	ReplicatedJob string `json:"replicatedJob"`

	// jobIndex of the Job that holds it.
	JobIndex int `json:"jobIndex,omitempty"`

	// podIndex is the completion index of the coordinator pod.
	PodIndex int `json:"podIndex,omitempty"`
}

// VolumeClaimPolicy declares shared PersistentVolumeClaims and their lifetime.
// +kubebuilder:validation:XValidation:rule="self.templates.all(t, !has(t.metadata.namespace) || size(t.metadata.namespace) == 0)",message="namespace cannot be set for VolumeClaimPolicies templates"
type VolumeClaimPolicy struct {
	// templates of the claims; each must be mounted by some container of
	// some replicated job, and must not clash with a template volume.
	// +kubebuilder:validation:MaxItems=50
	// +optional
	// +listType=atomic
	Templates []corev1.PersistentVolumeClaim `json:"templates,omitempty"`

	// retentionPolicy says whether the claims outlive the JobSet.
	// +optional
	RetentionPolicy *VolumeRetentionPolicy `json:"retentionPolicy,omitempty"`
}

// VolumeRetentionPolicy says what happens to claims when the JobSet goes.
type VolumeRetentionPolicy struct {
	// whenDeleted: Delete (default) or Retain.
	// +optional
	// +kubebuilder:default=Delete
	WhenDeleted *RetentionPolicyType `json:"whenDeleted,omitempty"`
}

// RetentionPolicyType is Delete or Retain.
// +kubebuilder:validation:Enum=Delete;Retain
type RetentionPolicyType string

const (
	// RetentionPolicyDelete deletes the claims with the JobSet.
	RetentionPolicyDelete RetentionPolicyType = "Delete"
	// RetentionPolicyRetain keeps them.
	RetentionPolicyRetain RetentionPolicyType = "Retain"
)
