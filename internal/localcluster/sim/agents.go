package sim

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/agent"
	"github.com/multislice/multislice/internal/cmdline"
	"github.com/multislice/multislice/internal/localcluster/realhost"
	"github.com/multislice/multislice/internal/localcluster/sim/fleet"
)

// Agents plays, for every simulated pod with the in-place restart agent as
// a sidecar (an init container named agent.ContainerName), the agent
// process that would run in it: the same protocol (agent.State), the same
// pod annotation. What the process does to its own pod, the pod's kubelet
// would write as the pod's status, and Agents writes that status itself,
// write for write: the exit with the restart code is AgentRestartSteps,
// the startup probe passing ReleaseSteps. A container restart (the pod's
// restart count) starts a new agent, with empty memory, as in a real pod.
type Agents struct {
	Config *rest.Config
	// Cache is the process's cache (NewCache), started by the caller.
	Cache cache.Cache
	Log   io.Writer
	// Workers bound concurrent pods (default 32): each is one agent.
	Workers int

	c      client.Client
	queue  workqueue.TypedRateLimitingInterface[types.NamespacedName]
	mu     sync.Mutex
	agents map[types.UID]*podAgent
}

// podAgent is one pod's current agent process.
type podAgent struct {
	mu          sync.Mutex
	incarnation int32 // the pod's restart count when it started
	exited      bool  // asked for a restart; the next incarnation takes over
	state       agent.State
}

// Run serves until ctx ends.
func (a *Agents) Run(ctx context.Context) error {
	if a.Workers == 0 {
		a.Workers = 32
	}
	if err := a.waitForJobSets(ctx); err != nil {
		return err
	}
	var err error
	if a.c, err = client.New(a.Config, client.Options{Scheme: scheme()}); err != nil {
		return err
	}
	a.agents = map[types.UID]*podAgent{}
	a.queue = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName]())
	defer a.queue.ShutDown()
	// Work is per pod; a JobSet change concerns every agent pod of it.
	onPod := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok && hasAgent(p) {
			a.queue.Add(types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
		}
	}
	onJobSet := func(obj any) {
		js, ok := obj.(*api.JobSet)
		if !ok {
			return
		}
		var pods corev1.PodList
		// The cache's own objects, not copies: only read here.
		if err := a.Cache.List(ctx, &pods, client.InNamespace(js.Namespace), client.MatchingLabels{api.JobSetNameKey: js.Name},
			client.UnsafeDisableDeepCopy); err != nil {
			return
		}
		for i := range pods.Items {
			onPod(&pods.Items[i])
		}
	}
	gone := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok {
			a.mu.Lock()
			delete(a.agents, p.UID)
			a.mu.Unlock()
		}
	}
	onNode := func(obj any) {
		if n, ok := obj.(*corev1.Node); ok {
			a.advertiseTPUChips(ctx, n)
		}
	}
	handlers := map[client.Object]toolscache.ResourceEventHandlerFuncs{
		&corev1.Pod{}: {AddFunc: onPod, UpdateFunc: func(_, o any) { onPod(o) }, DeleteFunc: gone},
		&api.JobSet{}: {AddFunc: onJobSet, UpdateFunc: func(old, o any) {
			if a, ok := old.(*api.JobSet); !ok || agent.Moved(a, o.(*api.JobSet)) {
				onJobSet(o)
			}
		}},
		&corev1.Node{}: {AddFunc: onNode, UpdateFunc: func(_, o any) { onNode(o) }},
	}
	for obj, h := range handlers {
		inf, err := a.Cache.GetInformer(ctx, obj)
		if err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(h); err != nil {
			return err
		}
	}
	if !a.Cache.WaitForCacheSync(ctx) {
		return ctx.Err()
	}
	fmt.Fprintln(a.Log, "playing the in-place restart agent of every simulated pod that has one")
	go func() { <-ctx.Done(); a.queue.ShutDown() }()
	var wg sync.WaitGroup
	for range a.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for a.next(ctx) {
			}
		}()
	}
	wg.Wait()
	return nil
}

func (a *Agents) next(ctx context.Context) bool {
	key, quit := a.queue.Get()
	if quit {
		return false
	}
	defer a.queue.Done(key)
	if err := a.sync(ctx, key); err != nil {
		fmt.Fprintf(a.Log, "%s: %v\n", key, err)
		a.queue.AddRateLimited(key)
		return true
	}
	a.queue.Forget(key)
	return true
}

// sync runs the agent of one pod until it waits.
func (a *Agents) sync(ctx context.Context, key types.NamespacedName) error {
	var pod corev1.Pod
	if err := a.Cache.Get(ctx, key, &pod); err != nil {
		return client.IgnoreNotFound(err)
	}
	if pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning {
		return nil // no agent runs yet, or any more
	}
	var node corev1.Node
	if err := a.Cache.Get(ctx, types.NamespacedName{Name: pod.Spec.NodeName}, &node); err == nil && node.Labels[fleet.RealHostLabel] == "true" {
		return nil // a real kubelet runs this pod's agent
	}
	var js api.JobSet
	if err := a.Cache.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: pod.Labels[api.JobSetNameKey]}, &js); err != nil {
		return client.IgnoreNotFound(err)
	}
	n := agent.MaxRestartCount(&pod.Status)
	a.mu.Lock()
	ag := a.agents[pod.UID]
	switch {
	case ag == nil:
		// First sight (also after this process restarted): the agent
		// already running in the pod has written what it knows.
		ag = &podAgent{incarnation: n}
		ag.state.Attempt = agent.PodAttempt(pod.Annotations)
		ag.state.Released = Released(&pod.Status)
		a.agents[pod.UID] = ag
	case ag.incarnation != n:
		ag = &podAgent{incarnation: n} // the containers restarted: a new agent process
		a.agents[pod.UID] = ag
	}
	a.mu.Unlock()
	ag.mu.Lock()
	defer ag.mu.Unlock()
	for !ag.exited {
		action, attempt := ag.state.Next(&js)
		var err error
		switch action {
		case agent.Wait:
			return nil
		case agent.Annotate:
			target := &corev1.Pod{}
			target.Namespace, target.Name = pod.Namespace, pod.Name
			err = a.c.Patch(ctx, target, client.RawPatch(types.MergePatchType, agent.AttemptPatch(attempt)))
		case agent.Restart:
			err = a.writeStatus(ctx, &pod, AgentRestartSteps(&pod.Status, agent.DefaultExitCode, metav1.Now()))
		case agent.Release:
			err = a.writeStatus(ctx, &pod, ReleaseSteps(&pod.Status, metav1.Now()))
		}
		if apierrors.IsNotFound(err) {
			return nil
		} else if err != nil {
			return fmt.Errorf("%s: %w", action, err)
		}
		switch action {
		case agent.Annotate:
			ag.state.Attempt = &attempt
		case agent.Restart:
			ag.exited = true
		case agent.Release:
			ag.state.Released = true
		}
	}
	return nil
}

// advertiseTPUChips plays GKE's TPU device plugin on a real TPU host.
func (a *Agents) advertiseTPUChips(ctx context.Context, n *corev1.Node) {
	patch := realhost.TPUChipsPatch(n)
	if patch == nil {
		return
	}
	target := &corev1.Node{}
	target.Name = n.Name
	if err := a.c.Status().Patch(ctx, target, client.RawPatch(types.MergePatchType, patch)); err != nil && !apierrors.IsNotFound(err) {
		fmt.Fprintf(a.Log, "advertise the TPU chips of %s: %v\n", n.Name, err)
	}
}

// writeStatus writes the kubelet's successive statuses of pod.
func (a *Agents) writeStatus(ctx context.Context, pod *corev1.Pod, steps []*corev1.PodStatus) error {
	_, err := WriteStatus(ctx, a.c, pod, steps)
	return err
}

// WriteStatus writes successive statuses of pod, one write each as a
// kubelet does, every one against the pod as the previous write left it;
// it returns the pod as the last write left it.
func WriteStatus(ctx context.Context, c client.Client, pod *corev1.Pod, steps []*corev1.PodStatus) (*corev1.Pod, error) {
	current := pod.DeepCopy()
	for _, st := range steps {
		updated := current.DeepCopy()
		updated.Status = *st
		if err := c.Status().Patch(ctx, updated, client.MergeFromWithOptions(current, client.MergeFromWithOptimisticLock{})); err != nil {
			return nil, err
		}
		current = updated
	}
	return current, nil
}

func hasAgent(p *corev1.Pod) bool {
	for _, c := range p.Spec.InitContainers {
		if c.Name == agent.ContainerName {
			return true
		}
	}
	return false
}

// waitForJobSets waits until the API server serves JobSets: a cluster
// started without the manager gets the CRD later (or never, then this
// component just waits).
func (a *Agents) waitForJobSets(ctx context.Context) error {
	dc, err := discovery.NewDiscoveryClientForConfig(a.Config)
	if err != nil {
		return err
	}
	said := false
	return wait.PollUntilContextCancel(ctx, time.Second, true, func(context.Context) (bool, error) {
		if _, err := dc.ServerResourcesForGroupVersion(api.GroupVersion.String()); err == nil {
			return true, nil
		}
		if !said {
			fmt.Fprintf(a.Log, "waiting for the API server to serve %s (the JobSet CRD)\n", api.GroupVersion)
			said = true
		}
		return false, nil
	})
}

// AgentsFlags is the command line of `multislice sim-agents`; `up` fills
// it and calls Args.
type AgentsFlags struct {
	// EgressPort serves the API server's egress proxy and the simulated
	// kubelets' logs on 127.0.0.1 (0: not at all).
	EgressPort int
	// APIServerRelay, host:port on the real hosts' pod network, relays
	// pods' connections to the API server ("": no real hosts).
	APIServerRelay string
}

// Bind defines the flags on fl, each writing into f, at their defaults.
func (f *AgentsFlags) Bind(fl *pflag.FlagSet) {
	fl.IntVar(&f.EgressPort, "egress-port", 0, "serve the API server's egress proxy and the simulated kubelets' logs on this 127.0.0.1 port (0: not at all)")
	fl.StringVar(&f.APIServerRelay, "apiserver-relay", "", "relay connections on this host:port of the real hosts' pod network to the API server (empty: not at all)")
}

// Args is the command line that gives sim-agents f.
func (f AgentsFlags) Args() []string { return cmdline.Args(f, (*AgentsFlags).Bind) }
