package v1alpha2

// JobSetConditionType is the type of a JobSet condition.
type JobSetConditionType string

// Condition types, as upstream names them.
const (
	JobSetCompleted               JobSetConditionType = "Completed"
	JobSetFailed                  JobSetConditionType = "Failed"
	JobSetSuspended               JobSetConditionType = "Suspended"
	JobSetStartupPolicyInProgress JobSetConditionType = "StartupPolicyInProgress"
	JobSetStartupPolicyCompleted  JobSetConditionType = "StartupPolicyCompleted"
	// JobSetRestartingJobSet is True while a restart is under way.
	JobSetRestartingJobSet JobSetConditionType = "RestartingJobSet"
	// JobSetTopologyAssigned is Multislice's own: True names the domain
	// each child Job got from slice-aware placement, False says why the
	// JobSet waits.
	JobSetTopologyAssigned JobSetConditionType = "TopologyAssigned"
	// JobSetInPlaceRestarting is Multislice's own: True while an in-place
	// restart waits for pods to reach the new attempt (the message says
	// which), False once they all have, or once it fell back to recreating.
	JobSetInPlaceRestarting JobSetConditionType = "InPlaceRestarting"
	// JobSetHotSwapped is Multislice's own: True while a JobSet whose
	// pools a higher-priority one took (hot-swap) waits for pools again,
	// naming the taker; False once it runs again.
	JobSetHotSwapped JobSetConditionType = "HotSwapped"
)

// Condition reasons and messages, exactly as upstream writes them.
const (
	AllJobsCompletedReason  = "AllJobsCompleted"
	AllJobsCompletedMessage = "jobset completed successfully"

	FailedJobsReason  = "FailedJobs"
	FailedJobsMessage = "jobset failed due to one or more job failures"

	ReachedMaxRestartsReason  = "ReachedMaxRestarts"
	ReachedMaxRestartsMessage = "jobset failed due to reaching max number of restarts"

	// ReachedReplicatedJobMaxRestartsReason and
	// ReachedMaxInfrastructureRestartsReason: a restart budget is spent
	// (Multislice's own, RestartBudgets gate).
	ReachedReplicatedJobMaxRestartsReason  = "ReachedReplicatedJobMaxRestarts"
	ReachedMaxInfrastructureRestartsReason = "ReachedMaxInfrastructureRestarts"

	// DeadlineExceededReason: spec.activeDeadlineSeconds ran out (KEP-1186).
	DeadlineExceededReason = "DeadlineExceeded"

	// SliceUnhealthyReason: slice health failed a Job whose slice broke.
	SliceUnhealthyReason = "SliceUnhealthy"
	// DomainsAssignedReason and InsufficientCapacityReason are placement's
	// (condition TopologyAssigned).
	DomainsAssignedReason      = "DomainsAssigned"
	InsufficientCapacityReason = "InsufficientCapacity"
	// PoolsTakenReason (HotSwapped True, and the victim's restart) and
	// HotSwapReason (TopologyAssigned True, the taker's) are hot-swap's.
	PoolsTakenReason = "PoolsTaken"
	HotSwapReason    = "HotSwap"
	// PoolsBackReason: HotSwapped False, the JobSet has its pools again.
	PoolsBackReason = "PoolsBack"

	FailJobSetActionReason  = "FailJobSetFailurePolicyAction"
	FailJobSetActionMessage = "applying FailJobSet failure policy action"

	SuspendedReason  = "SuspendedJobs"
	SuspendedMessage = "jobset is suspended"
	ResumedReason    = "ResumeJobs"
	ResumedMessage   = "jobset is resumed"

	InOrderStartupPolicyInProgressReason  = "InOrderStartupPolicyInProgress"
	InOrderStartupPolicyInProgressMessage = "in order startup policy is in progress"
	InOrderStartupPolicyCompletedReason   = "InOrderStartupPolicyCompleted"
	InOrderStartupPolicyCompletedMessage  = "in order startup policy has completed"

	// RestartingJobSet reasons: True while restarting, False once settled.
	DefaultFailurePolicyReason = "DefaultFailurePolicy"
	// FailurePolicyRuleReasonPrefix is followed by the matched rule's name.
	FailurePolicyRuleReasonPrefix = "FailurePolicy_"
	JobsReadyReason               = "JobsReady"
	JobsReadyMessage              = "all jobs are ready"
	JobSetFailedReason            = "JobSetFailed"
	JobSetCompletedReason         = "JobSetCompleted"
	JobSetSuspendedReason         = "JobSetSuspended"

	// InPlaceRestarting reasons (Multislice's own).
	WaitingForPodsReason   = "WaitingForPods"
	AllPodsRestartedReason = "AllPodsRestarted"
	AgentTimeoutReason     = "AgentTimeout"
	AgentMissingReason     = "AgentMissing"
)

// Event reasons of failure-policy actions and creation errors.
const (
	RestartJobSetActionReason                     = "RestartJobSetFailurePolicyAction"
	RestartJobSetAndIgnoreMaxRestartsActionReason = "RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction"
	RestartJobActionReason                        = "RestartJobFailurePolicyAction"
	RestartJobAndIgnoreMaxRestartsActionReason    = "RestartJobAndIgnoreMaxRestartsFailurePolicyAction"
	JobCreationFailedReason                       = "JobCreationFailed"
	HeadlessServiceCreationFailedReason           = "HeadlessServiceCreationFailed"
	PVCCreationFailedReason                       = "PVCCreationFailed"
)

// TerminalState values.
const (
	TerminalStateCompleted = "Completed"
	TerminalStateFailed    = "Failed"
)
