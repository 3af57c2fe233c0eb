package objcache

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
)

func TestSlimPodKeepsWhatIsRead(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "w-0", Namespace: "ns", Labels: map[string]string{
			"job-name": "w", batchv1.JobNameLabel: "w", api.JobSetNameKey: "js", "team": "a"},
			Annotations: map[string]string{"big": strings.Repeat("x", 4096), batchv1.JobCompletionIndexAnnotation: "3"}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "main", Image: "python",
			Env: []corev1.EnvVar{{Name: "TPU_WORKER_HOSTNAMES", Value: strings.Repeat("h,", 500)}}, Resources: corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{gke.TPUResource: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("1Gi")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	got, err := SlimPod(pod)
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "w-0", Namespace: "ns", Labels: map[string]string{
			"job-name": "w", batchv1.JobNameLabel: "w", api.JobSetNameKey: "js"},
			Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: "3"}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "tpu",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{gke.TPUResource: resource.MustParse("4")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if !equality.Semantic.DeepEqual(PodOf(got), want) {
		t.Errorf("SlimPod:\n got %+v\nwant %+v", PodOf(got), want)
	}
}

// TestSlimPodsShareTheirContainers: pods asking for as many chips share
// one container slice; a pod asking for none keeps no container.
func TestSlimPodsShareTheirContainers(t *testing.T) {
	pod := func(init bool, list func(corev1.ResourceList) corev1.ResourceRequirements, chips string) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "sidecar"}}}}
		c := corev1.Container{Name: "main"}
		if chips != "" {
			c.Resources = list(corev1.ResourceList{gke.TPUResource: resource.MustParse(chips)})
		}
		if init {
			p.Spec.InitContainers = append(p.Spec.InitContainers, c)
		} else {
			p.Spec.Containers = append(p.Spec.Containers, c)
		}
		return p
	}
	limits := func(l corev1.ResourceList) corev1.ResourceRequirements { return corev1.ResourceRequirements{Limits: l} }
	requests := func(l corev1.ResourceList) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: l}
	}
	slim := func(p *corev1.Pod) []corev1.Container {
		o, _ := SlimPod(p)
		return o.(*Pod).tpu
	}
	a, b, c := slim(pod(false, limits, "4")), slim(pod(true, requests, "4")), slim(pod(false, requests, "8"))
	if len(a) != 1 || &a[0] != &b[0] || &a[0] == &c[0] {
		t.Errorf("4 chips by limit and by request should share one slice, 8 chips another: %v %v %v", a, b, c)
	}
	if q := c[0].Resources.Requests[gke.TPUResource]; q.Value() != 8 || !gke.RequestsTPU(corev1.PodSpec{Containers: c}) {
		t.Errorf("the slim pod asks for %v TPU chips, want 8", q.String())
	}
	if got := slim(pod(false, limits, "")); got != nil {
		t.Errorf("a pod asking for no TPU kept containers %v", got)
	}
}

// TestSlimNodesShareTheirPoolsLabels: two hosts of a pool keep one copy
// of their labels (nodelabels), and each its own host name.
func TestSlimNodesShareTheirPoolsLabels(t *testing.T) {
	node := func(name string) *corev1.Node {
		// Fresh strings, as each decoded node has.
		pool := strings.Clone("np-0")
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			strings.Clone(gke.NodePoolLabel): pool, "kubernetes.io/hostname": strings.Clone(name)}}}
	}
	a, _ := SlimNode(node("h0"))
	b, _ := SlimNode(node("h1"))
	la, lb := a.(*Node).GetLabels(), b.(*Node).GetLabels()
	if unsafe.StringData(la[gke.NodePoolLabel]) != unsafe.StringData(lb[gke.NodePoolLabel]) {
		t.Error("the pool label's value is two copies")
	}
	if la["kubernetes.io/hostname"] != "h0" || lb["kubernetes.io/hostname"] != "h1" || len(la) != 2 {
		t.Errorf("labels changed: %v %v", la, lb)
	}
}

// TestSlimNodeKeepsWhatPlacementAndSliceHealthRead: the facts placement
// and slice health decide on survive the slimming unchanged.
func TestSlimNodeKeepsWhatPlacementAndSliceHealthRead(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "h0", Labels: map[string]string{gke.NodePoolLabel: "np-0", gke.ActiveMaintenanceLabel: "ONGOING"},
			Annotations: map[string]string{"big": strings.Repeat("x", 4096)}, DeletionTimestamp: &since},
		Spec: corev1.NodeSpec{Unschedulable: true, Taints: []corev1.Taint{{Key: gke.ImpendingTerminationTaint, Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
				{Type: corev1.NodeReady, Status: corev1.ConditionFalse, LastTransitionTime: since, LastHeartbeatTime: since}},
			Images:   []corev1.ContainerImage{{Names: []string{strings.Repeat("i", 1024)}}},
			NodeInfo: corev1.NodeSystemInfo{KernelVersion: "6.1"},
		},
	}
	got, err := SlimNode(node)
	if err != nil {
		t.Fatal(err)
	}
	slim := NodeOf(got)
	a, _ := gke.NotReadySince(node)
	b, _ := gke.NotReadySince(slim)
	if gke.NodeReady(slim) != gke.NodeReady(node) || gke.HostProblem(slim) != gke.HostProblem(node) ||
		gke.FitForWork(slim) != gke.FitForWork(node) || !a.Equal(b) || len(slim.Labels) != 2 || len(slim.Spec.Taints) != 1 {
		t.Errorf("the slim node decides differently: %+v", slim)
	}
	if slim.Annotations != nil || slim.Status.Images != nil || slim.Status.NodeInfo.KernelVersion != "" || len(slim.Status.Conditions) != 1 {
		t.Errorf("kept what nothing reads: %+v", slim)
	}
}

// TestSlimServiceKeepsItsOwner: a slim Service still maps to its JobSet.
func TestSlimServiceKeepsItsOwner(t *testing.T) {
	owner := metav1.OwnerReference{APIVersion: api.GroupVersion.String(), Kind: "JobSet", Name: "js", UID: "u", Controller: ptr.To(true)}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "js", Namespace: "ns", OwnerReferences: []metav1.OwnerReference{owner},
		Labels: map[string]string{api.JobSetNameKey: "js"}}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone,
		Selector: map[string]string{api.JobSetNameKey: "js"}, PublishNotReadyAddresses: true}}
	got, _ := SlimService(svc)
	slim := got.(*corev1.Service)
	if ref := metav1.GetControllerOf(slim); ref == nil || ref.UID != "u" || slim.Name != "js" || slim.Namespace != "ns" || len(slim.Labels) != 1 {
		t.Errorf("slim Service lost what finds its JobSet: %+v", slim.ObjectMeta)
	}
	if !equality.Semantic.DeepEqual(slim.Spec, corev1.ServiceSpec{}) {
		t.Errorf("kept the spec nothing reads: %+v", slim.Spec)
	}
}

// TestSlimObjectsAreSmall: what the cache keeps of 2,000 TPU pods and
// 2,000 TPU hosts, measured on the heap. A corev1.Pod's struct alone is
// 1,240 bytes and a corev1.Node's 784: kept as those types, this test
// measured 2,042 bytes a pod and 1,820 a node; 492 and 594 now (a node's
// labels shared by its pool: 1,124 while each kept a map).
func TestSlimObjectsAreSmall(t *testing.T) {
	const n = 2000
	tpu := corev1.ResourceList{gke.TPUResource: resource.MustParse("4")}
	perObject := func(slim func(i int) any) uint64 {
		kept := make([]any, n)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range kept {
			kept[i] = slim(i)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(kept)
		return (after.HeapAlloc - before.HeapAlloc) / n
	}
	pod := perObject(func(i int) any {
		o, _ := SlimPod(&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("js-slice-job-%d-%d-abcde", i/16, i%16), Namespace: "default",
				UID: types.UID(fmt.Sprintf("8a1e8a57-0d5b-4b55-9f43-%012d", i)), ResourceVersion: fmt.Sprint(100000 + i),
				Labels:      map[string]string{batchv1.JobNameLabel: fmt.Sprintf("js-slice-job-%d", i/16), api.JobSetNameKey: "js", api.RestartsKey: "0"},
				Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: fmt.Sprint(i % 16)}},
			Spec:   corev1.PodSpec{NodeName: fmt.Sprintf("host-%d", i), Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{Requests: tpu}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		})
		return o
	})
	node := perObject(func(i int) any {
		name := fmt.Sprintf("host-%d", i)
		labels := map[string]string{gke.HostnameLabel: name, gke.NodePoolLabel: fmt.Sprintf("pool-%d", i/16)}
		for _, k := range []string{"kubernetes.io/arch", "kubernetes.io/os", "type", "node.kubernetes.io/instance-type", gke.AcceleratorLabel,
			gke.TopologyLabel, "topology.kubernetes.io/zone", "topology.kubernetes.io/region"} {
			labels[k] = "value-of-" + k
		}
		o, _ := SlimNode(&corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(fmt.Sprintf("8a1e8a57-0d5b-4b55-9f43-%012d", i)),
				ResourceVersion: fmt.Sprint(100000 + i), Labels: labels},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: gke.TPUTaintKey, Value: gke.TPUTaintValue, Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
				Reason: "KubeletReady", Message: "kubelet is posting ready status"}}},
		})
		return o
	})
	t.Logf("a slim pod %d bytes, a slim node with 10 labels %d bytes", pod, node)
	if pod > 700 || node > 800 {
		t.Errorf("a slim pod is %d bytes (want at most 700), a slim node %d (want at most 800)", pod, node)
	}
}

// TestCopiesShareNothing: what the cache's Get and List hand out
// (DeepCopyObject) may be changed without changing the cache's objects.
func TestCopiesShareNothing(t *testing.T) {
	tpu := corev1.ResourceList{gke.TPUResource: resource.MustParse("4")}
	p, _ := SlimPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "w-0", Labels: map[string]string{api.JobSetNameKey: "js"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: tpu}}}}})
	n, _ := SlimNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "h0", Labels: map[string]string{gke.NodePoolLabel: "np-0"}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: gke.TPUTaintKey}}}})
	pc := p.(*Pod).DeepCopyObject().(*corev1.Pod)
	pc.Labels[api.JobSetNameKey] = "other"
	pc.Spec.Containers[0].Resources.Requests[gke.TPUResource] = resource.MustParse("8")
	nc := n.(*Node).DeepCopyObject().(*corev1.Node)
	nc.Labels[gke.NodePoolLabel] = "other"
	nc.Spec.Taints[0].Key = "other"
	pod, node := PodOf(p), NodeOf(n)
	if q := pod.Spec.Containers[0].Resources.Requests[gke.TPUResource]; pod.Labels[api.JobSetNameKey] != "js" || q.Value() != 4 {
		t.Errorf("a copy's change reached the cached pod: %+v", pod)
	}
	if node.Labels[gke.NodePoolLabel] != "np-0" || node.Spec.Taints[0].Key != gke.TPUTaintKey {
		t.Errorf("a copy's change reached the cached node: %+v", node)
	}
}

// TestSlimNodesShareTaints: a pool's hosts with the same taints share one
// slice; taints added at other times are not the same.
func TestSlimNodesShareTaints(t *testing.T) {
	node := func(added *metav1.Time) *Node {
		n, _ := SlimNode(&corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{
			{Key: gke.TPUTaintKey, Value: gke.TPUTaintValue, Effect: corev1.TaintEffectNoSchedule},
			{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: added}}}})
		return n.(*Node)
	}
	at := func(sec int64) *metav1.Time { t := metav1.Unix(sec, 0); return &t }
	a, b, c := node(at(1)), node(at(1)), node(at(2))
	if &a.taints[0] != &b.taints[0] || &a.taints[0] == &c.taints[0] {
		t.Error("equal taints should share one slice, taints added at another time another")
	}
	if !c.taints[1].TimeAdded.Equal(at(2)) {
		t.Errorf("the taint's time is %v, want %v", c.taints[1].TimeAdded, at(2))
	}
}

// TestViews: event handlers get a pod or node whatever an informer hands
// them: the cache's slim object, the API's type, or a tombstone of either.
func TestViews(t *testing.T) {
	slimPod, _ := SlimPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "w-0"}})
	slimNode, _ := SlimNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "h0"}})
	whole := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "w-1"}}
	for _, c := range []struct {
		obj  any
		pod  string
		node string
	}{
		{slimPod, "w-0", ""},
		{toolscache.DeletedFinalStateUnknown{Key: "w-0", Obj: slimPod}, "w-0", ""},
		{whole, "w-1", ""},
		{slimNode, "", "h0"},
		{toolscache.DeletedFinalStateUnknown{Key: "h0", Obj: slimNode}, "", "h0"},
		{&corev1.Service{}, "", ""},
	} {
		var pod, node string
		if p := PodOf(c.obj); p != nil {
			pod = p.Name
		}
		if n := NodeOf(c.obj); n != nil {
			node = n.Name
		}
		if pod != c.pod || node != c.node {
			t.Errorf("%T: PodOf %q, NodeOf %q; want %q, %q", c.obj, pod, node, c.pod, c.node)
		}
	}
	if PodOf(whole) != whole {
		t.Error("PodOf copied a *corev1.Pod")
	}
}
