// Package objcache is what the manager and the dashboard keep of the
// cluster in their caches: one scheme, one selection and one slim form per
// kind, so that a dashboard served by the manager reads the manager's
// cache instead of watching Nodes, Jobs and Pods a second time.
package objcache

import (
	"strconv"
	"sync"
	"unique"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slicev1beta1 "github.com/multislice/multislice/api/accelerator/v1beta1"
	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/agent"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/nodelabels"
)

// Scheme knows Kubernetes' built-in kinds, scheduling.k8s.io/v1beta1
// (Workload, PodGroup), JobSets and GKE's Slices.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = schedulingv1beta1.AddToScheme(s) // alpha: not in client-go's scheme
	_ = api.AddToScheme(s)
	_ = slicev1beta1.AddToScheme(s)
	return s
}

// Options are the cache's: Jobs and Services that JobSets own (a Service
// as its metadata), every pod and node in its slim form, the Events about
// JobSets, and the Job controller's FailedCreate events (pods refused:
// few, read as events.k8s.io/v1 so that one cache holds both selections);
// managed fields stripped from everything.
func Options() cache.Options {
	owned := cache.ByObject{Label: OwnedByJobSets()}
	return cache.Options{
		Scheme:           Scheme(),
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&batchv1.Job{}: owned, &corev1.Service{}: {Label: owned.Label, Transform: SlimService},
			// Every pod, not only JobSets': placement must see every
			// workload's pods on a domain.
			&corev1.Pod{}:     {Transform: SlimPod},
			&corev1.Node{}:    {Transform: SlimNode},
			&corev1.Event{}:   {Field: fields.OneTermEqualSelector("involvedObject.kind", "JobSet")},
			&eventsv1.Event{}: {Field: fields.SelectorFromSet(fields.Set{"regarding.kind": "Job", "reason": "FailedCreate"})},
		},
	}
}

// WithWorkloads adds to o the Workloads and PodGroups JobSets own
// (spec.scheduling). Only then: a cache resolves every kind it is given
// when it is made, and an API server that does not serve them (the
// default in Kubernetes 1.37) would stop the manager from starting.
func WithWorkloads(o cache.Options) cache.Options {
	owned := cache.ByObject{Label: OwnedByJobSets()}
	o.ByObject[&schedulingv1beta1.Workload{}] = owned
	o.ByObject[&schedulingv1beta1.PodGroup{}] = owned
	return o
}

// OwnedByJobSets selects the objects the JobSet controller creates: the
// cache holds only these, never every Job or Service of the cluster.
func OwnedByJobSets() labels.Selector {
	req, _ := labels.NewRequirement(api.JobSetNameKey, selection.Exists, nil)
	return labels.NewSelector().Add(*req)
}

// SlimNode keeps what is read of a node (placement, slice health, the
// fleet's view) as a Node: its name, labels, taints, cordon, deletion and
// readiness. The rest (images, addresses, capacity, node info, the other
// conditions and their heartbeats) is most of a Node, so 5,000 nodes stay
// cheap. Its labels are one set shared by the nodes of its pool but for
// its host name (nodelabels).
func SlimNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	slim := &Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion,
			DeletionTimestamp: n.DeletionTimestamp},
		labels: nodelabels.Of(n.Name, n.Labels), taints: taintsOf(n), unschedulable: n.Spec.Unschedulable,
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			// The kubelets of a fleet say the same reason and message.
			slim.ready = corev1.NodeCondition{Type: corev1.NodeReady, Status: unique.Make(c.Status).Value(), Reason: unique.Make(c.Reason).Value(),
				Message: unique.Make(c.Message).Value(), LastTransitionTime: c.LastTransitionTime}
		}
	}
	return slim, nil
}

// SlimService keeps a JobSet's headless Service's metadata: whether it
// exists is all that is read of it; its owner finds its JobSet.
func SlimService(obj any) (any, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return obj, nil
	}
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: svc.Name, Namespace: svc.Namespace, UID: svc.UID,
		ResourceVersion: svc.ResourceVersion, Labels: svc.Labels, OwnerReferences: svc.OwnerReferences,
		DeletionTimestamp: svc.DeletionTimestamp}}, nil
}

// podLabels and podAnnotations are those of a pod that are read: which
// Job, JobSet and restart attempt it belongs to, its index in its Job and
// its in-place restart attempt.
var (
	podLabels      = [...]string{batchv1.JobNameLabel, api.LegacyJobNameLabel, api.JobSetNameKey, api.RestartsKey}
	podAnnotations = [...]string{api.InPlaceRestartAttemptKey, batchv1.JobCompletionIndexAnnotation}
)

// SlimPod keeps what is read of a pod (placement, slice repair, in-place
// restart, the JobSet's view) as a Pod: its name, the labels and
// annotations above, its node, its phase, how often its containers
// restarted (the highest count) and whether it asks for TPU chips (see
// tpuContainers). A cached pod is then about 500 bytes, whatever the pod
// carries.
func SlimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	slim := &Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: unique.Make(p.Namespace).Value(), UID: p.UID,
			ResourceVersion: p.ResourceVersion, DeletionTimestamp: p.DeletionTimestamp},
		labels:   unique.Make(pick(p.Labels, podLabels[:])),
		nodeName: p.Spec.NodeName, phase: p.Status.Phase, restarts: agent.MaxRestartCount(&p.Status),
		tpu:         tpuContainers(p.Spec),
		annotations: pick(p.Annotations, podAnnotations[:]),
	}
	return slim, nil
}

// tpuContainers is what a slim pod keeps of its containers: nothing if
// none asks for TPU chips, else one container named "tpu" asking for the
// chips of the first that does, init containers first (its request, else
// its limit). Whether a pod asks (gke.RequestsTPU) is all anything reads
// of a cached pod's containers, so the slice is shared by every pod asking
// for as many chips: cached objects are read-only (the cache hands out
// copies), and 4,800 pods' own containers and resource lists were 9 MB of
// the manager's heap.
func tpuContainers(spec corev1.PodSpec) []corev1.Container {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			q, ok := cs[i].Resources.Requests[gke.TPUResource]
			if !ok {
				q, ok = cs[i].Resources.Limits[gke.TPUResource]
			}
			if ok {
				return containersAsking(q)
			}
		}
	}
	return nil
}

// sharedTPU holds one tpuContainers slice per chip count (GKE hosts
// have 1, 4 or 8 chips).
var sharedTPU shared[[]corev1.Container]

// containersAsking is tpuContainers' slice for q chips.
func containersAsking(q resource.Quantity) []corev1.Container {
	return sharedTPU.get(q.String(), func() []corev1.Container {
		return []corev1.Container{{Name: "tpu", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{gke.TPUResource: q}}}}
	})
}

// sharedTaints holds one slice per set of node taints: a pool's hosts
// carry the same ones (google.com/tpu), and 5,120 nodes' own copies were
// 1 MB of the manager's heap.
var sharedTaints shared[[]corev1.Taint]

func taintsOf(n *corev1.Node) []corev1.Taint {
	if len(n.Spec.Taints) == 0 {
		return nil
	}
	// Made on every node's every heartbeat: no formatting. A taint's key,
	// value and effect hold no NUL (the API server validates them).
	var key []byte
	for _, t := range n.Spec.Taints {
		for _, field := range []string{t.Key, t.Value, string(t.Effect)} {
			key = append(append(key, field...), 0)
		}
		if t.TimeAdded != nil {
			key = strconv.AppendInt(key, t.TimeAdded.UnixNano(), 10)
		}
		key = append(key, '\n')
	}
	return sharedTaints.get(string(key), func() []corev1.Taint { return n.Spec.Taints })
}

// maxShared bounds each shared table: past it, values are their
// objects' own.
const maxShared = 16

// shared is a few values, by key, that many cached objects share; they
// are read-only, as everything the cache holds.
type shared[V any] struct {
	mu    sync.Mutex
	byKey map[string]V
}

// get is key's value, made by newValue the first time, one of at most
// maxShared.
func (t *shared[V]) get(key string, newValue func() V) V {
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.byKey[key]; ok {
		return v
	}
	v := newValue()
	if t.byKey == nil {
		t.byKey = map[string]V{}
	}
	if len(t.byKey) < maxShared {
		t.byKey[key] = v
	}
	return v
}

// picked is a pod's values of podLabels or podAnnotations, in their
// order, each one copy shared by every pod that has it (a Job's pods
// share their names, attempts and indexes).
type picked struct {
	values [max(len(podLabels), len(podAnnotations))]string
	set    uint8 // bit i: the pod has keys[i]
}

func pick(m map[string]string, keys []string) picked {
	var out picked
	for i, k := range keys {
		if v, ok := m[k]; ok {
			out.values[i], out.set = unique.Make(v).Value(), out.set|1<<i
		}
	}
	return out
}

// asMap is p as the map it was picked from.
func (p picked) asMap(keys []string) map[string]string {
	if p.set == 0 {
		return nil
	}
	out := make(map[string]string, len(keys))
	for i, k := range keys {
		if p.set&(1<<i) != 0 {
			out[k] = p.values[i]
		}
	}
	return out
}
