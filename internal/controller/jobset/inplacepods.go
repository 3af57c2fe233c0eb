package jobset

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/agent"
	"github.com/multislice/multislice/internal/controller/jobset/policy"
	"github.com/multislice/multislice/internal/objcache"
)

// inPlacePods keeps what an in-place restart reads of each pod of each
// JobSet, fed by the pod informer's events: a reconcile copies a few words
// per pod instead of listing and copying the JobSet's pods (at 1,024 pods,
// most of the manager's CPU in a restart). Memory only: it is rebuilt from
// the informer's initial list after a restart of the manager.
type inPlacePods struct {
	mu       sync.Mutex
	byJobSet map[types.NamespacedName]*jobSetPods
}

// jobSetPods are one JobSet's pods, and the last answer of pods() while
// none of them changes: reconciles come far more often than pods move.
type jobSetPods struct {
	facts      map[string]podFacts
	answer     []policy.InPlacePod
	answeredAt string // the recreate attempt answer is for; "" none
}

// podFacts is one pod as the in-place restart sees it.
type podFacts struct {
	policy.InPlacePod
	// attempt is the pod's restart-attempt label (the JobSet's recreate
	// attempt it belongs to); counts: not going away, and its agent runs.
	attempt string
	counts  bool
}

func factsOf(p *corev1.Pod) podFacts {
	return podFacts{
		InPlacePod: policy.InPlacePod{Name: p.Name, Attempt: agent.PodAttempt(p.Annotations), Restarts: agent.MaxRestartCount(&p.Status)},
		attempt:    p.Labels[api.RestartsKey],
		counts:     p.DeletionTimestamp == nil && agentStarted(p),
	}
}

// progressed: b moves an in-place restart along from a: an agent wrote an
// attempt or a container restarted. A pod that starts or goes moves its
// Job's status too, which brings the reconcile.
func progressed(a, b podFacts) bool {
	return a.Restarts != b.Restarts || !ptr.Equal(a.Attempt, b.Attempt)
}

func same(a, b podFacts) bool {
	return a.Name == b.Name && a.counts == b.counts && a.attempt == b.attempt && !progressed(a, b)
}

// set records p; it reports whether the in-place restart of its JobSet
// may move (a new pod with an attempt, or progressed).
func (c *inPlacePods) set(p *corev1.Pod) (types.NamespacedName, bool) {
	js, ok := jobSetOfPod(p)
	if !ok {
		return js, false
	}
	f := factsOf(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byJobSet == nil {
		c.byJobSet = map[types.NamespacedName]*jobSetPods{}
	}
	pods := c.byJobSet[js]
	if pods == nil {
		pods = &jobSetPods{facts: map[string]podFacts{}}
		c.byJobSet[js] = pods
	}
	old, had := pods.facts[p.Name]
	if had && same(old, f) {
		return js, false // a heartbeat of facts already known: the answer stands
	}
	pods.facts[p.Name], pods.answeredAt = f, ""
	return js, had && progressed(old, f) || !had && f.Attempt != nil
}

// delete forgets p; its JobSet's restart may move if p had an attempt.
func (c *inPlacePods) delete(p *corev1.Pod) (types.NamespacedName, bool) {
	js, ok := jobSetOfPod(p)
	if !ok {
		return js, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	pods := c.byJobSet[js]
	if pods == nil {
		return js, false
	}
	old, had := pods.facts[p.Name]
	delete(pods.facts, p.Name)
	pods.answeredAt = ""
	if len(pods.facts) == 0 {
		delete(c.byJobSet, js)
	}
	return js, had && old.Attempt != nil
}

// pods are the JobSet's pods an in-place restart waits for at recreate
// attempt restarts: not going away, agent started, of that attempt; by
// name, so that the messages naming them are stable.
// The answer is shared until a pod changes: callers only read it.
func (c *inPlacePods) pods(js types.NamespacedName, restarts string) []policy.InPlacePod {
	c.mu.Lock()
	defer c.mu.Unlock()
	pods := c.byJobSet[js]
	if pods == nil {
		return nil
	}
	if pods.answeredAt == restarts && restarts != "" {
		return pods.answer
	}
	out := make([]policy.InPlacePod, 0, len(pods.facts))
	for _, f := range pods.facts {
		if f.counts && f.attempt == restarts {
			out = append(out, f.InPlacePod)
		}
	}
	slices.SortFunc(out, func(a, b policy.InPlacePod) int { return strings.Compare(a.Name, b.Name) })
	pods.answer, pods.answeredAt = out, restarts
	return out
}

func jobSetOfPod(p *corev1.Pod) (types.NamespacedName, bool) {
	name := p.Labels[api.JobSetNameKey]
	return types.NamespacedName{Namespace: p.Namespace, Name: name}, name != ""
}

// feedInPlace is the pod watch of in-place restarts: it records each pod
// in the index first and then, when the pod moved its JobSet's restart
// along (an agent's annotation, a container restart, a pod come or gone),
// enqueues the JobSet after period, so that changes within it join one
// reconcile (the delaying queue keeps the earliest time) and that
// reconcile reads the index with them.
func feedInPlace(idx *inPlacePods, period time.Duration) handler.EventHandler {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	enqueue := func(js types.NamespacedName, moved bool, q queue) {
		if moved {
			q.AddAfter(reconcile.Request{NamespacedName: js}, period)
		}
	}
	pod := objcache.PodOf
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q queue) {
			if p := pod(e.Object); p != nil {
				js, moved := idx.set(p)
				enqueue(js, moved, q)
			}
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q queue) {
			if p := pod(e.ObjectNew); p != nil {
				if e.ObjectOld.GetLabels()[api.JobSetNameKey] != p.Labels[api.JobSetNameKey] {
					if old := pod(e.ObjectOld); old != nil {
						js, moved := idx.delete(old) // it left its JobSet, as if deleted
						enqueue(js, moved, q)
					}
				}
				js, moved := idx.set(p)
				enqueue(js, moved, q)
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q queue) {
			if p := pod(e.Object); p != nil {
				js, moved := idx.delete(p)
				enqueue(js, moved, q)
			}
		},
	}
}

// agentStarted: the pod's agent runs, or has run, in this pod. A real
// kubelet keeps a pod Pending while its agent holds the barrier (the
// sidecar's startup probe has not passed, so the pod is not initialized):
// such a pod counts once its agent wrote an attempt. A pod Pending with no
// attempt is still being scheduled or started: it waits for capacity, it
// does not lag.
func agentStarted(p *corev1.Pod) bool {
	switch p.Status.Phase {
	case corev1.PodRunning:
		return true
	case corev1.PodPending:
		return p.Spec.NodeName != "" && agent.PodAttempt(p.Annotations) != nil
	}
	return false
}
