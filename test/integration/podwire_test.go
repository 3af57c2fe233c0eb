package integration

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/multislice/multislice/internal/objcache"
)

// The manager's cache receives pods slimmed on the wire from a real API
// server (objcache.SlimPodWatches), and keeps of them what it keeps of
// the whole pods the API server returned for the same writes.
func TestPodWatchSlimmedOnTheWire(t *testing.T) {
	env := sharedEnv(t)
	ns := env.Namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := rest.CopyConfig(env.Config)
	cfg.ContentType = runtime.ContentTypeProtobuf
	hc, err := objcache.HTTPClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	tpu := corev1.ResourceList{"google.com/tpu": resource.MustParse("4")}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "worker", Namespace: ns, Labels: map[string]string{"job-name": "j", "other": "x"},
			Annotations: map[string]string{"batch.kubernetes.io/job-completion-index": "3"}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "main", Image: "trainer",
			Env:       []corev1.EnvVar{{Name: "TPU_WORKER_HOSTNAMES", Value: "a,b,c,d"}},
			Resources: corev1.ResourceRequirements{Requests: tpu, Limits: tpu}}},
			Volumes: []corev1.Volume{{Name: "ckpt", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
	}
	created, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	update := created.DeepCopy()
	update.Status = corev1.PodStatus{Phase: corev1.PodRunning, Message: "started",
		ContainerStatuses: []corev1.ContainerStatus{{Name: "main", Image: "trainer", RestartCount: 2, Ready: true}}}
	running, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, update, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	for _, want := range []*corev1.Pod{created, running} {
		var e watch.Event
		select {
		case e = <-w.ResultChan():
		case <-ctx.Done():
			t.Fatalf("no watch event for resourceVersion %s", want.ResourceVersion)
		}
		got, ok := e.Object.(*corev1.Pod)
		if !ok {
			t.Fatalf("watch event %s: %T, want a pod", e.Type, e.Object)
		}
		if got.ResourceVersion != want.ResourceVersion {
			t.Fatalf("watch event at resourceVersion %s, want %s", got.ResourceVersion, want.ResourceVersion)
		}
		if len(got.ManagedFields) > 0 || len(got.Spec.Volumes) > 0 || len(got.Spec.Containers[0].Env) > 0 {
			t.Errorf("pod not slimmed on the wire: %d managed fields, %d volumes, env %v",
				len(got.ManagedFields), len(got.Spec.Volumes), got.Spec.Containers[0].Env)
		}
		slimGot, _ := objcache.SlimPod(got)
		slimWant, _ := objcache.SlimPod(want)
		if !apiequality.Semantic.DeepEqual(objcache.PodOf(slimGot), objcache.PodOf(slimWant)) {
			t.Errorf("the cache keeps\n%+v\nof the slimmed pod, and\n%+v\nof the whole one", slimGot, slimWant)
		}
	}
}
