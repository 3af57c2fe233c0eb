package testobj

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
)

// TPU makes spec the pod of one host of a TPU slice, asked for as GKE tells
// a workload to: node selectors on the accelerator and the topology (left
// out when ""), and chips (a quantity, e.g. "4") google.com/tpu in the
// limits of its first container.
func TPU(spec *corev1.PodSpec, accelerator, topology, chips string) {
	if spec.NodeSelector == nil {
		spec.NodeSelector = map[string]string{}
	}
	for key, v := range map[string]string{gke.AcceleratorLabel: accelerator, gke.TopologyLabel: topology} {
		if v != "" {
			spec.NodeSelector[key] = v
		}
	}
	c := &spec.Containers[0]
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	c.Resources.Limits[gke.TPUResource] = resource.MustParse(chips)
}

// TPUPod is a pod of one container, "main" running image, that never
// restarts, on one host of a TPU slice (TPU).
func TPUPod(image, accelerator, topology, chips string) corev1.PodSpec {
	spec := corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "main", Image: image}}}
	TPU(&spec, accelerator, topology, chips)
	return spec
}

// TPU makes the pods of the replicated job added last TPU slice hosts.
func (b *JobSetBuilder) TPU(accelerator, topology, chips string) *JobSetBuilder {
	return b.LastReplicatedJob(func(rj *api.ReplicatedJob) {
		TPU(&rj.Template.Spec.Template.Spec, accelerator, topology, chips)
	})
}
