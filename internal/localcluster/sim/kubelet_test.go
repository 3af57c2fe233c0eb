package sim

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// laggingCache shows each pod in turn of views, one per Get, then the last.
type laggingCache struct {
	cache.Cache
	views []*corev1.Pod
}

func (c *laggingCache) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	v := c.views[0]
	if len(c.views) > 1 {
		c.views = c.views[1:]
	}
	v.DeepCopyInto(obj.(*corev1.Pod))
	return nil
}

func TestReadWaitsForTheCacheToCatchUp(t *testing.T) {
	waiting := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "main", RestartCount: 1}}}}
	running := waiting.DeepCopy()
	running.Status.ContainerStatuses[0].State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.Now()}
	key := types.NamespacedName{Namespace: "ns", Name: "p"}

	k := &Kubelet{Pods: &laggingCache{views: []*corev1.Pod{waiting, waiting, running}}, Poll: time.Millisecond}
	_, lines, _, _, err := k.read(context.Background(), key, "main", false)
	if err != nil || len(lines) == 0 || !strings.Contains(lines[0].Text, "(restart 1)") {
		t.Fatalf("a cache that catches up: lines %v, err %v; want the running instance's lines", lines, err)
	}

	// A container that really waits is answered as a kubelet would, once
	// the cache had its time.
	k = &Kubelet{Pods: &laggingCache{views: []*corev1.Pod{waiting}}, Poll: time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, _, _, code, err := k.read(ctx, key, "main", false)
	if err == nil || code != http.StatusBadRequest || !strings.Contains(err.Error(), "waiting to start") {
		t.Fatalf("a waiting container: code %d, err %v; want 400 waiting to start", code, err)
	}
}
