package integration

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/objcache"
)

// The manager's cache keeps pods and nodes slim (objcache.Pod,
// objcache.Node) and still serves them as whole API objects: Get and List
// hand out *corev1.Pod and *corev1.Node copies, label selectors match,
// and an event handler reads what it is given with PodOf and NodeOf.
func TestCacheServesSlimPodsAndNodesWhole(t *testing.T) {
	env := sharedEnv(t)
	ns := env.Namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-host", Labels: map[string]string{
		gke.NodePoolLabel: ns + "-pool", gke.HostnameLabel: ns + "-host"}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: gke.TPUTaintKey, Value: gke.TPUTaintValue, Effect: corev1.TaintEffectNoSchedule}}}}
	if err := env.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), node) })
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if err := env.Client.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	tpu := corev1.ResourceList{gke.TPUResource: resource.MustParse("4")}
	for i, name := range []string{"w-0", "w-1"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels:      map[string]string{batchv1.JobNameLabel: "w", api.JobSetNameKey: "js", "team": "a"},
			Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: []string{"0", "1"}[i], "note": "x"}},
			Spec: corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "main", Image: "trainer",
				Resources: corev1.ResourceRequirements{Requests: tpu, Limits: tpu}}}}}
		if err := env.Client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "main", Image: "trainer", RestartCount: 2}}}
		if err := env.Client.Status().Update(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}

	c, err := cache.New(env.Config, objcache.Options())
	if err != nil {
		t.Fatal(err)
	}
	inf, err := c.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	handed := make(chan any, 100)
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(o any) { handed <- o }}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}

	var pod corev1.Pod
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "w-1"}, &pod); err != nil {
		t.Fatal(err)
	}
	q := pod.Spec.Containers[0].Resources.Requests[gke.TPUResource]
	if pod.Labels[api.JobSetNameKey] != "js" || pod.Labels["team"] != "" || pod.Annotations[batchv1.JobCompletionIndexAnnotation] != "1" ||
		pod.Annotations["note"] != "" || pod.Spec.NodeName != node.Name || pod.Status.Phase != corev1.PodRunning ||
		pod.Status.ContainerStatuses[0].RestartCount != 2 || q.Value() != 4 || pod.UID == "" || pod.ResourceVersion == "" {
		t.Errorf("the cache's pod: %+v", pod)
	}
	pod.Labels[api.JobSetNameKey] = "changed" // a copy: the cache's pod stays
	pod.Spec.Containers[0].Resources.Requests[gke.TPUResource] = resource.MustParse("8")

	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{api.JobSetNameKey: "js"}); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 2 {
		t.Fatalf("listed %d pods of JobSet js, want 2", len(pods.Items))
	}
	for _, p := range pods.Items {
		if q := p.Spec.Containers[0].Resources.Requests[gke.TPUResource]; p.Labels[api.JobSetNameKey] != "js" || q.Value() != 4 {
			t.Errorf("a copy's change reached the cache: %s %v %s", p.Name, p.Labels, q.String())
		}
	}
	if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"team": "a"}); err != nil || len(pods.Items) != 0 {
		t.Errorf("a label the cache does not keep matched %d pods (%v)", len(pods.Items), err)
	}

	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes, client.MatchingLabels{gke.NodePoolLabel: ns + "-pool"}); err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 1 {
		t.Fatalf("listed %d nodes of the pool, want 1", len(nodes.Items))
	}
	// The API server adds a not-ready taint of its own to a new node.
	if n := &nodes.Items[0]; !gke.NodeReady(n) || len(n.Spec.Taints) == 0 || n.Spec.Taints[0].Key != gke.TPUTaintKey ||
		n.Labels[gke.HostnameLabel] != node.Name {
		t.Errorf("the cache's node: %+v", n)
	}

	for seen := 0; seen < 2; {
		select {
		case o := <-handed:
			if _, slim := o.(*objcache.Pod); !slim {
				t.Fatalf("the handler was given a %T, want *objcache.Pod", o)
			}
			if p := objcache.PodOf(o); p.Namespace == ns {
				seen++
				if p.Spec.NodeName != node.Name {
					t.Errorf("PodOf: %+v", p)
				}
			}
		case <-ctx.Done():
			t.Fatal("the handler was not given both pods")
		}
	}
}
