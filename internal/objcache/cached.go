package objcache

import (
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/multislice/multislice/internal/nodelabels"
)

// Pod is what the caches keep of a pod (SlimPod): a corev1.Pod's struct
// alone, every field of its spec and status empty, is 1,240 bytes, and
// its maps of labels and annotations as much again; this is about 500
// with its strings.
// It never leaves the cache as it is: the cache's Get and List copy it
// into a *corev1.Pod (DeepCopyObject), and event handlers read it as one
// with PodOf.
type Pod struct {
	metav1.ObjectMeta // name, namespace, UID, version and deletion only

	labels      unique.Handle[picked] // of podLabels: one copy for a Job's pods
	annotations picked                // of podAnnotations
	nodeName    string
	phase       corev1.PodPhase
	restarts    int32              // the highest restart count of its containers
	tpu         []corev1.Container // shared, read-only: see tpuContainers
}

// view is p as a *corev1.Pod that shares what p holds: read-only.
func (p *Pod) view() *corev1.Pod {
	out := &corev1.Pod{ObjectMeta: p.ObjectMeta, Spec: corev1.PodSpec{NodeName: p.nodeName, Containers: p.tpu},
		Status: corev1.PodStatus{Phase: p.phase}}
	out.Labels, out.Annotations = p.GetLabels(), p.GetAnnotations()
	if p.restarts > 0 {
		out.Status.ContainerStatuses = []corev1.ContainerStatus{{RestartCount: p.restarts}}
	}
	return out
}

// GetLabels are the labels kept (podLabels), in a map of the caller's:
// the cache's List matches label selectors on them.
func (p *Pod) GetLabels() map[string]string {
	if p.labels == (unique.Handle[picked]{}) { // not made by SlimPod
		return nil
	}
	return p.labels.Value().asMap(podLabels[:])
}

// GetAnnotations are the annotations kept (podAnnotations).
func (p *Pod) GetAnnotations() map[string]string { return p.annotations.asMap(podAnnotations[:]) }

// DeepCopyObject is p as a *corev1.Pod of the caller's: what the cache's
// Get and List hand out.
func (p *Pod) DeepCopyObject() runtime.Object { return p.view().DeepCopy() }

// GetObjectKind: a cached pod carries no kind; the cache sets it on
// what it hands out.
func (p *Pod) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// PodOf is the pod an informer's event carries (a Pod of the cache, a
// *corev1.Pod, or either in a deletion's tombstone), as a *corev1.Pod;
// nil for anything else. Like every object an informer hands out, it
// shares what the cache holds: read it, or DeepCopy it to change it.
func PodOf(obj any) *corev1.Pod { return viewOf[corev1.Pod, *Pod](obj) }

// Node is what the caches keep of a node (SlimNode): a corev1.Node's
// struct alone is 784 bytes and its map of labels about 700 more; this is
// about 600 with its strings (its labels shared by its pool: nodelabels). Like
// Pod, it leaves the cache as a *corev1.Node: copied by DeepCopyObject
// for the cache's Get and List, shared (NodeOf) with event handlers.
type Node struct {
	metav1.ObjectMeta // name, UID, version and deletion only

	labels        nodelabels.Labels
	taints        []corev1.Taint
	unschedulable bool
	ready         corev1.NodeCondition // Type "" when the node reports none
}

// view is n as a *corev1.Node that shares what n holds (its taints):
// read-only. Its labels are a map of its own.
func (n *Node) view() *corev1.Node {
	out := &corev1.Node{ObjectMeta: n.ObjectMeta, Spec: corev1.NodeSpec{Taints: n.taints, Unschedulable: n.unschedulable}}
	out.Labels = n.labels.Map()
	if n.ready.Type != "" {
		out.Status.Conditions = []corev1.NodeCondition{n.ready}
	}
	return out
}

// GetLabels are n's labels in a map of the caller's: the cache's List
// matches label selectors on them, and its indexes read them.
func (n *Node) GetLabels() map[string]string { return n.labels.Map() }

// NodeLabel is the value of a node's label key ("" when it has none),
// read without a map of its labels: for indexes, which run on every
// update of every node.
func NodeLabel(o metav1.Object, key string) string {
	if n, ok := o.(*Node); ok {
		return n.labels.Value(key)
	}
	return o.GetLabels()[key]
}

// DeepCopyObject is n as a *corev1.Node of the caller's: what the cache's
// Get and List hand out.
func (n *Node) DeepCopyObject() runtime.Object {
	out := n.view()
	labels := out.Labels // already the caller's
	out.Labels = nil
	out = out.DeepCopy()
	out.Labels = labels
	return out
}

// GetObjectKind: a cached node carries no kind; the cache sets it on
// what it hands out.
func (n *Node) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// NodeOf is the node an informer's event carries (a Node of the cache, a
// *corev1.Node, or either in a deletion's tombstone), as a *corev1.Node;
// nil for anything else. Like every object an informer hands out, it
// shares what the cache holds: read it, or DeepCopy it to change it.
func NodeOf(obj any) *corev1.Node { return viewOf[corev1.Node, *Node](obj) }

// viewOf is obj as a *T, whether it is the cache's slim S, a *T, or
// either in a deletion's tombstone; nil for anything else.
func viewOf[T any, S interface{ view() *T }](obj any) *T {
	switch o := obj.(type) {
	case S:
		return o.view()
	case *T:
		return o
	case toolscache.DeletedFinalStateUnknown:
		return viewOf[T, S](o.Obj)
	}
	return nil
}
