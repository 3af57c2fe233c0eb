package sim

import (
	"context"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/multislice/multislice/internal/localcluster/sim/fleet"
)

// reapAfter is how long kwok may take to remove a deleted simulated pod
// past its Stages' time (kubeletStop, or the end of its grace period)
// before the Reaper does it.
const reapAfter = 2 * time.Second

// kubeletStop is the longest the Stages take to stop and remove a deleted
// pod as a kubelet does (pod-stopped, then pod-delete-stopped).
const kubeletStop = 2100 * time.Millisecond

// Reaper removes the simulated pods kwok missed: a deleted pod that
// outlives its Stages (pod-delete-stopped, pod-delete-after-grace) by reapAfter is
// deleted with no grace period, as its kubelet would once its containers
// stopped. kwok acts on a pod only on an event, and drops it when the
// event arrives before kwok holds the pod's node (a kwok restarted after
// a control-plane outage, while the garbage collector deletes a restarted
// JobSet's pods); such a pod stays Terminating for ever, and so does the
// foreground deletion of its Job, whose successor cannot be created.
type Reaper struct {
	Config *rest.Config
	// Cache is the process's cache (NewCache), started by the caller.
	Cache cache.Cache
	Log   io.Writer
}

// Run serves until ctx ends.
func (r *Reaper) Run(ctx context.Context) error {
	c, err := client.New(r.Config, client.Options{Scheme: scheme()})
	if err != nil {
		return err
	}
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName]())
	defer queue.ShutDown()
	look := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok && reapable(p) {
			queue.AddAfter(types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, time.Until(reapTime(p)))
		}
	}
	inf, err := r.Cache.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return err
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: look, UpdateFunc: func(_, o any) { look(o) }}); err != nil {
		return err
	}
	go func() { <-ctx.Done(); queue.ShutDown() }()
	for {
		key, quit := queue.Get()
		if quit {
			return nil
		}
		switch after, err := r.reap(ctx, c, key); {
		case err != nil:
			fmt.Fprintf(r.Log, "%s: remove the deleted simulated pod: %v\n", key, err)
			queue.AddRateLimited(key)
		case after > 0:
			queue.AddAfter(key, after)
		default:
			queue.Forget(key)
		}
		queue.Done(key)
	}
}

// reap removes the pod at key if kwok has missed it, or says how long to
// wait before it looks again (0: never).
func (r *Reaper) reap(ctx context.Context, c client.Client, key types.NamespacedName) (time.Duration, error) {
	var pod corev1.Pod
	if err := r.Cache.Get(ctx, key, &pod); err != nil || !reapable(&pod) {
		return 0, client.IgnoreNotFound(err)
	}
	if wait := time.Until(reapTime(&pod)); wait > 0 {
		return wait, nil
	}
	if !r.onSimulatedNode(ctx, &pod) {
		return 0, nil
	}
	err := c.Delete(ctx, &pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &pod.UID})
	if err == nil {
		fmt.Fprintf(r.Log, "%s: kwok missed its deletion; removed it as its kubelet would\n", key)
	}
	if apierrors.IsConflict(err) { // another pod of that name now
		return 0, nil
	}
	return 0, client.IgnoreNotFound(err)
}

// reapable: a deleted pod bound to a node and not yet removed, or removed
// (deleted with no grace period) with no finalizer left. A removed pod
// otherwise waits only for its finalizers; one with none should be gone.
// It is there only when the API server's delete was cut between its two
// steps, recording the grace period of 0 and removing the pod (kwok's or
// the Reaper's own delete, cancelled as `up` restarted its sender after an
// outage); a kubelet deletes such a pod again.
func reapable(p *corev1.Pod) bool {
	removed := p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds == 0
	return p.DeletionTimestamp != nil && p.Spec.NodeName != "" && (!removed || len(p.Finalizers) == 0)
}

// onSimulatedNode: kwok, not a real kubelet, runs the pod's node.
func (r *Reaper) onSimulatedNode(ctx context.Context, p *corev1.Pod) bool {
	var n corev1.Node
	err := r.Cache.Get(ctx, types.NamespacedName{Name: p.Spec.NodeName}, &n)
	return err == nil && n.Labels[fleet.SimulatedLabel] == "true"
}

// reapTime is when a deleted simulated pod is overdue: reapAfter past the
// moment kwok's Stages remove it (kubeletStop after the deletion, or the
// end of the grace period for a pod that ignores SIGTERM).
func reapTime(p *corev1.Pod) time.Time {
	gone := p.DeletionTimestamp.Time
	if _, graceful := p.Annotations[GracefulStopAnnotation]; !graceful && p.DeletionGracePeriodSeconds != nil {
		gone = gone.Add(-time.Duration(*p.DeletionGracePeriodSeconds) * time.Second).Add(kubeletStop)
	}
	return gone.Add(reapAfter)
}
