package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Slice is one TPU slice of a dynamic-slicing fleet: the sub-blocks
// (partitions) it is stitched from and whether it is Ready.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Topology",type=string,JSONPath=`.spec.topology`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 49",message="a Slice's name has at most 49 characters (GKE appends a cluster hash to it)"
type Slice struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SliceSpec   `json:"spec,omitempty"`
	Status SliceStatus `json:"status,omitempty"`
}

// SliceSpec is the slice's shape and the partitions it is formed from.
type SliceSpec struct {
	// Type is the TPU generation, tpu7x.
	// +kubebuilder:validation:Enum=tpu7x
	Type string `json:"type"`
	// Topology is the slice's chip grid, AxBxC, dimensions sorted: each
	// a multiple of 4 (stitched from whole 4x4x4 partitions), at most
	// 9,216 chips; or a sub-slice of one partition (2x2x4, 2x4x4).
	// +kubebuilder:validation:Pattern=`^[0-9]+x[0-9]+x[0-9]+$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Value is immutable"
	Topology string `json:"topology"`
	// PartitionIDs are the partitions (the values of the nodes' label
	// cloud.google.com/gke-tpu-partition-4x4x4-id) the slice is formed
	// from, one per 64 chips (one for a sub-slice).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=144
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Value is immutable"
	// +listType=set
	PartitionIDs []string `json:"partitionIds"`
}

// SliceStatus says whether the slice can run work.
type SliceStatus struct {
	// Conditions: Ready, True once every host of every partition is
	// there and fit for work; False with a reason (FAILED: a host failed,
	// or the partitions cannot form the slice) otherwise.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// SliceList is a list of Slices.
//
// +kubebuilder:object:root=true
type SliceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Slice `json:"items"`
}
