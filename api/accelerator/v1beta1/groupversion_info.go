// Package v1beta1 is GKE's Slice API, group accelerator.gke.io, version
// v1beta1, as GKE's slice controller serves it for dynamic slicing
// (tpu7x): a TPU slice formed from 4x4x4 sub-blocks (partitions) at
// schedule time. The names and fields are GKE's contract, so a Slice
// written for GKE means the same here; what Multislice adds is labelled
// as ours (keys.go).
// +kubebuilder:object:generate=true
// +groupName=accelerator.gke.io
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "accelerator.gke.io", Version: "v1beta1"}

	// SchemeBuilder registers the API types with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &Slice{}, &SliceList{})
		metav1.AddToGroupVersion(s, GroupVersion)
		return nil
	})

	// AddToScheme adds the API types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
