// Package gke holds the label, taint and resource names GKE puts on TPU
// nodes, so that the simulated fleet, placement and the webhooks all speak
// exactly GKE's dialect.
package gke

const (
	// NodePoolLabel names the node pool of a node; it is the usual
	// exclusive-topology key of a multislice workload.
	NodePoolLabel = "cloud.google.com/gke-nodepool"
	// AcceleratorLabel is the TPU accelerator, e.g. tpu-v4-podslice.
	AcceleratorLabel = "cloud.google.com/gke-tpu-accelerator"
	// TopologyLabel is the TPU topology of the node's slice, e.g. 2x2x2.
	TopologyLabel = "cloud.google.com/gke-tpu-topology"
	// AcceleratorCountLabel is the number of TPU chips on the node.
	AcceleratorCountLabel = "cloud.google.com/gke-accelerator-count"
	// InstanceTypeLabel is the machine type, e.g. ct4p-hightpu-4t.
	InstanceTypeLabel = "node.kubernetes.io/instance-type"
	// HostnameLabel is the node's name: Pathways' head is placed
	// exclusively by it (one head per host).
	HostnameLabel = "kubernetes.io/hostname"

	// SliceTopologyAnnotation is the pod annotation with which a tpu7x
	// workload asks for a slice formed at schedule time (dynamic slicing:
	// stitched from 4x4x4 sub-blocks, or cut from one), selecting only the
	// accelerator.
	SliceTopologyAnnotation = "cloud.google.com/gke-tpu-slice-topology"
	// TopologyBlockLabel and PartitionCubeLabel place a tpu7x node in its
	// block and its 4x4x4 sub-block (one node pool per sub-block).
	TopologyBlockLabel = "cloud.google.com/gce-topology-block"
	PartitionCubeLabel = "cloud.google.com/gke-tpu-partition-4x4x4-id"
	// PartitionHalfLabel and PartitionQuarterLabel place a sub-block's host
	// in the 2x4x4 and 2x2x4 partitions of its cube (GKE labels a node with
	// a partition id for every sub-slice shape); Kueue's topology-aware
	// scheduling gives a sub-slice's pods one of them.
	PartitionHalfLabel    = "cloud.google.com/gke-tpu-partition-2x4x4-id"
	PartitionQuarterLabel = "cloud.google.com/gke-tpu-partition-2x2x4-id"
	// PodSetRequiredTopologyAnnotation is Kueue's pod annotation naming the
	// topology level a pod set must fit in; GKE's sub-slicing needs it.
	PodSetRequiredTopologyAnnotation = "kueue.x-k8s.io/podset-required-topology"
	// PodSetSliceRequiredTopologyAnnotation and PodSetSliceSizeAnnotation
	// are Kueue's: every PodSetSliceSize pods of a pod set on one domain of
	// the named level (for a super-slice: 16 pods on each 4x4x4 cube).
	PodSetSliceRequiredTopologyAnnotation = "kueue.x-k8s.io/podset-slice-required-topology"
	PodSetSliceSizeAnnotation             = "kueue.x-k8s.io/podset-slice-size"

	// MultisliceGroupLabel and MultisliceGroupSizeLabel are the seed's
	// names for the labels that join node pools into a multislice group.
	MultisliceGroupLabel     = "MultisliceGroup"
	MultisliceGroupSizeLabel = "MultisliceGroupSize"

	// TPUResource is the extended resource of TPU chips; TPUTaintKey is the
	// taint GKE puts on every TPU node (value TPUTaintValue, NoSchedule).
	TPUResource   = "google.com/tpu"
	TPUTaintKey   = "google.com/tpu"
	TPUTaintValue = "present"

	// ImpendingTerminationTaint and ActiveMaintenanceLabel mark a node that
	// is about to go away for host maintenance.
	ImpendingTerminationTaint = "cloud.google.com/impending-node-termination"
	ActiveMaintenanceLabel    = "cloud.google.com/active-node-maintenance"
)
