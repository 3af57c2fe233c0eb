// Package podtemplate holds what the JobSet webhook and controller both
// know of a pod template that may change while a JobSet is suspended.
package podtemplate

import corev1 "k8s.io/api/core/v1"

// CopyResources sets the pod's resources and each container's and init
// container's (matched by name) to from's. A container from lacks (one a
// webhook added to a Job) keeps its own.
func CopyResources(to, from *corev1.PodSpec) {
	to.Resources = from.Resources
	for _, lists := range [][2][]corev1.Container{{to.Containers, from.Containers}, {to.InitContainers, from.InitContainers}} {
		for i := range lists[0] {
			for _, f := range lists[1] {
				if f.Name == lists[0][i].Name {
					lists[0][i].Resources = f.Resources
				}
			}
		}
	}
}
