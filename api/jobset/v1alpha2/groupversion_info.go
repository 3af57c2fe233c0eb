// Package v1alpha2 is the JobSet API, group jobset.x-k8s.io, version
// v1alpha2: wire-compatible with upstream kubernetes-sigs/jobset, so any
// client written for upstream works unchanged. It imports only
// apimachinery, so pure decisions over JobSets need no client library.
// +kubebuilder:object:generate=true
// +groupName=jobset.x-k8s.io
package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "jobset.x-k8s.io", Version: "v1alpha2"}

	// SchemeBuilder registers the API types with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &JobSet{}, &JobSetList{})
		metav1.AddToGroupVersion(s, GroupVersion)
		return nil
	})

	// AddToScheme adds the API types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
