package podtemplate

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestCopyResources(t *testing.T) {
	cpu := func(v string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v)}}
	}
	to := &corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "added-by-a-webhook", Resources: cpu("1")}},
		Containers:     []corev1.Container{{Name: "a", Resources: cpu("1")}, {Name: "b", Resources: cpu("1")}},
	}
	from := &corev1.PodSpec{
		Resources:  &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
		Containers: []corev1.Container{{Name: "b", Resources: cpu("3")}, {Name: "a", Resources: cpu("2")}},
	}
	CopyResources(to, from)
	got := func(c corev1.Container) string { q := c.Resources.Requests[corev1.ResourceCPU]; return q.String() }
	if got(to.Containers[0]) != "2" || got(to.Containers[1]) != "3" || got(to.InitContainers[0]) != "1" || to.Resources == nil {
		t.Errorf("after CopyResources: containers a=%s b=%s, the added one %s, pod resources %v; want 2, 3, 1 and set",
			got(to.Containers[0]), got(to.Containers[1]), got(to.InitContainers[0]), to.Resources)
	}
}
