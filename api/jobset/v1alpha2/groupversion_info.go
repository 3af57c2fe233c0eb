// Package v1alpha2 is the JobSet API, group jobset.x-k8s.io, version
// v1alpha2: wire-compatible with upstream kubernetes-sigs/jobset, so any
// client written for upstream works unchanged.
// +kubebuilder:object:generate=true
// +groupName=jobset.x-k8s.io
package v1alpha2

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "jobset.x-k8s.io", Version: "v1alpha2"}

	// SchemeBuilder registers the API types with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the API types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
