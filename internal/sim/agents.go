package sim

import (
	"context"
	"fmt"
	"io"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/agent"
	jobsetcontroller "github.com/multislice/multislice/internal/controller/jobset"
)

// Agents plays, for every simulated pod with the in-place restart agent as
// a sidecar (an init container named agent.ContainerName), the agent
// process that would run in it: the same protocol (agent.State), the same
// pod annotation. What a process does to its own pod, it says to the
// simulated kubelet (the kwok Stages): its exit with the restart code is
// RestartAllAnnotation, its startup probe passing is
// BarrierLiftedAnnotation. A container restart (the pod's restart count)
// starts a new agent, with empty memory, as in a real pod.
type Agents struct {
	Config *rest.Config
	Log    io.Writer
	// Parallelism bounds concurrent pod patches (default 32).
	Parallelism int

	c      client.Client
	cache  cache.Cache
	queue  workqueue.TypedRateLimitingInterface[types.NamespacedName]
	mu     sync.Mutex
	agents map[types.UID]*podAgent
}

// podAgent is one pod's current agent process.
type podAgent struct {
	incarnation int32 // the pod's restart count when it started
	exited      bool  // asked for a restart; the next incarnation takes over
	state       agent.State
}

// Run serves until ctx ends.
func (a *Agents) Run(ctx context.Context) error {
	if a.Parallelism == 0 {
		a.Parallelism = 32
	}
	scheme := runtime.NewScheme()
	_ = api.AddToScheme(scheme)
	_ = corev1.AddToScheme(scheme)
	var err error
	if a.cache, err = cache.New(a.Config, cache.Options{Scheme: scheme}); err != nil {
		return err
	}
	if a.c, err = client.New(a.Config, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	a.agents = map[types.UID]*podAgent{}
	a.queue = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName]())
	defer a.queue.ShutDown()
	enqueue := func(obj any) {
		if o, ok := obj.(client.Object); ok {
			name := o.GetName()
			if _, isPod := obj.(*corev1.Pod); isPod {
				if name = o.GetLabels()[api.JobSetNameKey]; name == "" {
					return
				}
			}
			a.queue.Add(types.NamespacedName{Namespace: o.GetNamespace(), Name: name})
		}
	}
	gone := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok {
			a.mu.Lock()
			delete(a.agents, p.UID)
			a.mu.Unlock()
		}
	}
	handler := toolscache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }, DeleteFunc: gone}
	for _, obj := range []client.Object{&corev1.Pod{}, &api.JobSet{}} {
		inf, err := a.cache.GetInformer(ctx, obj)
		if err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return err
		}
	}
	go func() { _ = a.cache.Start(ctx) }()
	if !a.cache.WaitForCacheSync(ctx) {
		return ctx.Err()
	}
	fmt.Fprintln(a.Log, "playing the in-place restart agent of every simulated pod that has one")
	go func() { <-ctx.Done(); a.queue.ShutDown() }()
	for {
		key, quit := a.queue.Get()
		if quit {
			return nil
		}
		if err := a.sync(ctx, key); err != nil {
			fmt.Fprintf(a.Log, "%s: %v\n", key, err)
			a.queue.AddRateLimited(key)
		} else {
			a.queue.Forget(key)
		}
		a.queue.Done(key)
	}
}

// sync runs one protocol step for every agent pod of a JobSet.
func (a *Agents) sync(ctx context.Context, key types.NamespacedName) error {
	var js api.JobSet
	if err := a.cache.Get(ctx, key, &js); err != nil {
		return client.IgnoreNotFound(err)
	}
	var pods corev1.PodList
	// The cache's own objects (no copy per pod per event): only read here.
	if err := a.cache.List(ctx, &pods, client.InNamespace(key.Namespace), client.MatchingLabels{api.JobSetNameKey: key.Name},
		client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	type work struct {
		pod   *corev1.Pod
		agent *podAgent
	}
	var todo []work
	a.mu.Lock()
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || !hasAgent(p) {
			continue
		}
		n := jobsetcontroller.MaxRestartCount(&p.Status)
		ag := a.agents[p.UID]
		switch {
		case ag == nil:
			// First sight (also after this process restarted): the agent
			// already running in the pod has written what it knows.
			ag = &podAgent{incarnation: n}
			ag.state.Attempt = jobsetcontroller.PodAttempt(p.Annotations)
			_, ag.state.Released = p.Annotations[BarrierLiftedAnnotation]
			_, ag.exited = p.Annotations[RestartAllAnnotation]
			a.agents[p.UID] = ag
		case ag.incarnation != n:
			ag = &podAgent{incarnation: n} // the containers restarted: a new agent process
			a.agents[p.UID] = ag
		}
		if !ag.exited {
			todo = append(todo, work{p, ag})
		}
	}
	a.mu.Unlock()
	errs := make([]error, len(todo))
	workqueue.ParallelizeUntil(ctx, a.Parallelism, len(todo), func(i int) {
		errs[i] = a.step(ctx, &js, todo[i].pod, todo[i].agent)
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// step acts for one pod's agent until the protocol says wait.
func (a *Agents) step(ctx context.Context, js *api.JobSet, pod *corev1.Pod, ag *podAgent) error {
	for {
		action, n := ag.state.Next(js)
		var patch []byte
		switch action {
		case agent.Wait:
			return nil
		case agent.Annotate:
			patch = agent.AttemptPatch(n)
		case agent.Restart:
			patch = annotate(RestartAllAnnotation, fmt.Sprint(agent.DefaultExitCode))
		case agent.Release:
			patch = annotate(BarrierLiftedAnnotation, "true")
		}
		target := &corev1.Pod{}
		target.Namespace, target.Name = pod.Namespace, pod.Name
		if err := a.c.Patch(ctx, target, client.RawPatch(types.MergePatchType, patch)); apierrors.IsNotFound(err) {
			return nil
		} else if err != nil {
			return fmt.Errorf("pod %s: %s: %w", pod.Name, action, err)
		}
		switch action {
		case agent.Annotate:
			ag.state.Attempt = &n
		case agent.Restart:
			ag.exited = true
			return nil
		case agent.Release:
			ag.state.Released = true
		}
	}
}

func annotate(key, value string) []byte {
	return []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value))
}

func hasAgent(p *corev1.Pod) bool {
	for _, c := range p.Spec.InitContainers {
		if c.Name == agent.ContainerName {
			return true
		}
	}
	return false
}
