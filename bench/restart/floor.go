package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/multislice/multislice/internal/agent"
	"github.com/multislice/multislice/internal/controller/jobset/policy"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/localcluster/sim"
	"github.com/multislice/multislice/test/framework"
)

// floorWorkers and the floor's client rate are those of the simulated
// agents (`multislice sim-agents`), which make the same writes in ours.
const floorWorkers = 32

// floorRound is an in-place restart with no controller: the Jobs and the
// Service the JobSet controller would create for the in-place JobSet, the
// Jobs pinned to their pools by hand and owned by no JobSet, so that
// neither the manager nor the simulated agents act on them. The bench
// itself makes exactly the writes a real cluster needs: per pod, the
// kubelet's two statuses when the agent exits with its restart code (not
// for the pod that failed, whose kubelet already restarted it), the
// agent's attempt annotation, and, once every pod has it, the kubelet's
// three statuses when the barrier lifts. It knows the moment every pod is
// at the attempt without reading anything (its own writes returned): the
// floor of the coordination ours does through the JobSet's status.
func floorRound(c *framework.Cluster, slices int, name string) (result, error) {
	ctx := context.Background()
	pods := slices * 16
	objs, err := pinnedJobs(ctx, c, slices, name, true)
	if err != nil {
		return result{}, err
	}
	w := watchPods(c.Client, name, pods)
	defer deleteAll(ctx, c, objs, w)
	fl, err := newFloorAgents(c)
	if err != nil {
		return result{}, err
	}
	// Start: every pod at attempt 0 with its barrier down, as ours starts.
	if _, err := w.waitFor(pods, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning }); err != nil {
		return result{}, err
	}
	if err := fl.each(ctx, w.running(), func(p *corev1.Pod) error { return fl.restartTo(ctx, p, 0, false) }); err != nil {
		return result{}, err
	}
	if err := fl.each(ctx, w.running(), func(p *corev1.Pod) error { return fl.release(ctx, p) }); err != nil {
		return result{}, err
	}
	if _, err := w.waitFor(pods, func(p *corev1.Pod) bool { return ready(p, true, "0", "0") }); err != nil {
		return result{}, err
	}
	time.Sleep(2 * time.Second)
	self := selfCPU()
	m, err := startMeter(ctx, c)
	if err != nil {
		return result{}, err
	}
	began := time.Now()
	if out, err := c.Run("chaos", "fail-pod", "--nodepool", fmt.Sprintf("big-np-%d", slices/2)); err != nil {
		return result{}, fmt.Errorf("chaos: %v\n%s", err, out)
	}
	// Detection: the kubelet restarted the failed pod's containers.
	var failed *corev1.Pod
	if _, err := w.waitFor(1, func(p *corev1.Pod) bool {
		if agent.MaxRestartCount(&p.Status) > 0 && failed == nil {
			failed = p
		}
		return failed != nil
	}); err != nil {
		return result{}, err
	}
	var res result
	at := func(want int, ok func(*corev1.Pod) bool) (time.Duration, error) {
		_, err := w.waitFor(want, ok)
		return time.Since(began), err
	}
	var signalled sync.WaitGroup
	signalled.Add(1)
	var signalErr error
	go func() {
		defer signalled.Done()
		signalErr = fl.each(ctx, w.running(), func(p *corev1.Pod) error { return fl.restartTo(ctx, p, 1, p.UID != failed.UID) })
	}()
	if res.detect, err = at(1, func(p *corev1.Pod) bool { return attempt(p) == "1" }); err != nil {
		return res, err
	}
	signalled.Wait()
	if signalErr != nil {
		return res, signalErr
	}
	// Every annotation is written: the barrier lifts now, while the watch
	// measures when the pods' attempts show.
	res.lifted = time.Since(began)
	released := make(chan error, 1)
	go func() { released <- fl.each(ctx, w.running(), func(p *corev1.Pod) error { return fl.release(ctx, p) }) }()
	all, err := at(pods, func(p *corev1.Pod) bool { return attempt(p) == "1" })
	if err != nil {
		return res, err
	}
	if err := <-released; err != nil {
		return res, err
	}
	if res.total, err = at(pods, func(p *corev1.Pod) bool { return ready(p, true, "0", "1") }); err != nil {
		return res, err
	}
	res.fanOut, res.release = all-res.detect, res.total-all
	if err := m.stop(ctx, c, &res); err != nil {
		return res, err
	}
	res.cpu += fmt.Sprintf(", the floor's agents (this bench) %.1fs", (selfCPU() - self).Seconds())
	return res, nil
}

// pinnedJobs creates the child Jobs and the headless Service the
// controller would create for the JobSet (in place or not), each Job
// pinned to pool big-np-i, owned by nothing, their pods labelled with a
// JobSet name that no JobSet has.
func pinnedJobs(ctx context.Context, c *framework.Cluster, slices int, name string, inPlace bool) ([]client.Object, error) {
	objs, err := plannedJobs(ctx, c, slices, name, inPlace)
	if err != nil {
		return nil, err
	}
	return objs, framework.CreateAll(ctx, c.Objects, objs, len(objs))
}

// plannedJobs are the Service and Jobs the controller's plan has for the
// JobSet, pinned to pools by hand and owned by nothing.
func plannedJobs(ctx context.Context, c *framework.Cluster, slices int, name string, inPlace bool) ([]client.Object, error) {
	return plannedAttempt(ctx, c, slices, name, inPlace, 0)
}

// plannedAttempt is plannedJobs at restart attempt restarts.
func plannedAttempt(ctx context.Context, c *framework.Cluster, slices int, name string, inPlace bool, restarts int32) ([]client.Object, error) {
	// The JobSet exists only long enough to be defaulted as ours is.
	js := jobSet(name, slices, inPlace)
	js.Spec.ManagedBy = ptr.To("multislice.dev/bench-by-hand")
	if err := c.Objects.Create(ctx, js); err != nil {
		return nil, err
	}
	js.Status.Restarts = restarts
	plan := policy.Decide(policy.Observed{JobSet: js, Now: time.Now()})
	if err := c.Objects.Delete(ctx, js); err != nil {
		return nil, err
	}
	if len(plan.Create) != slices || plan.Service == nil {
		return nil, fmt.Errorf("the controller's plan has %d Jobs and Service %v, want %d and one", len(plan.Create), plan.Service != nil, slices)
	}
	objs := []client.Object{plan.Service}
	for i, j := range plan.Create {
		j.Spec.Template.Spec.NodeSelector[gke.NodePoolLabel] = fmt.Sprintf("big-np-%d", i)
		objs = append(objs, j)
	}
	for _, o := range objs {
		o.SetOwnerReferences(nil)
	}
	return objs, nil
}

// createRound is the floor of restarting every pod (kind "create"): the
// same cluster creating the same pods with no manager, scheduler and
// kubelets only. The Jobs and Service the controller would create are
// made at once, pinned by hand; the time runs from the first create to
// every pod Running.
func createRound(c *framework.Cluster, slices int, name string) (result, error) {
	ctx := context.Background()
	objs, err := plannedJobs(ctx, c, slices, name, false)
	if err != nil {
		return result{}, err
	}
	w := watchPods(c.Client, name, slices*16)
	defer deleteAll(ctx, c, objs, w)
	m, err := startMeter(ctx, c)
	if err != nil {
		return result{}, err
	}
	began := time.Now()
	if err := framework.CreateAll(ctx, c.Objects, objs, len(objs)); err != nil {
		return result{}, err
	}
	var res result
	if _, err := w.waitFor(slices*16, func(*corev1.Pod) bool { return true }); err != nil {
		return res, err
	}
	res.created = time.Since(began)
	if _, err := w.waitFor(slices*16, func(p *corev1.Pod) bool { return ready(p, false, "0", "") }); err != nil {
		return res, err
	}
	res.total = time.Since(began)
	return res, m.stop(ctx, c, &res)
}

// byHandRound is the floor of a restart-all (kind "by-hand"): the same
// cluster restarting the same Jobs with no manager. The Jobs the
// controller would create, pinned by hand, run; then, with no fault to
// detect, all are deleted at once as the controller deletes them
// (foreground: a Job goes once its pods have), and each is created again
// at the next attempt the moment its name is free. What ours adds to it
// is the manager's; what it adds to create is the cluster's deleting.
func byHandRound(c *framework.Cluster, slices int, name string) (result, error) {
	ctx := context.Background()
	first, err := plannedAttempt(ctx, c, slices, name, false, 0)
	if err != nil {
		return result{}, err
	}
	next, err := plannedAttempt(ctx, c, slices, name, false, 1)
	if err != nil {
		return result{}, err
	}
	pods := slices * 16
	w := watchPods(c.Client, name, pods)
	defer deleteAll(ctx, c, next, w)
	if err := framework.CreateAll(ctx, c.Objects, first, len(first)); err != nil {
		return result{}, err
	}
	if _, err := w.waitFor(pods, func(p *corev1.Pod) bool { return ready(p, false, "0", "") }); err != nil {
		return result{}, err
	}
	time.Sleep(2 * time.Second) // settle, as round does
	m, err := startMeter(ctx, c)
	if err != nil {
		return result{}, err
	}
	began := time.Now()
	jobs := first[1:] // the Service stays, as the controller keeps it
	errs := make([]error, len(jobs))
	workqueue.ParallelizeUntil(ctx, len(jobs), len(jobs), func(i int) {
		errs[i] = c.Objects.Delete(ctx, jobs[i], client.PropagationPolicy(metav1.DeletePropagationForeground))
	})
	if err := errors.Join(errs...); err != nil {
		return result{}, err
	}
	// Each Job again once a watch of the Jobs sees its name free, as the
	// controller learns it from its cache (polling the API server with
	// creates would load it, and the manager's Job webhook, with refusals).
	jobsNow, stopJobs := watchLabelled(c.Client, name, func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
		return f.Batch().V1().Jobs().Informer()
	})
	defer close(stopJobs)
	jobsBack := make(chan error, 1)
	go func() {
		errs := make([]error, len(jobs))
		workqueue.ParallelizeUntil(ctx, len(jobs), len(jobs), func(i int) {
			again := next[i+1]
			key := again.GetNamespace() + "/" + again.GetName()
			for time.Since(began) < w.patience {
				if _, taken, _ := jobsNow.GetByKey(key); !taken {
					err := c.Objects.Create(ctx, again)
					if !apierrors.IsAlreadyExists(err) {
						errs[i] = err
						return
					}
				}
				time.Sleep(10 * time.Millisecond)
			}
			errs[i] = fmt.Errorf("%s: its name was not free within %s", again.GetName(), w.patience)
		})
		jobsBack <- errors.Join(errs...)
	}()
	var res result
	if err := w.recreated(pods, began, &res); err != nil {
		return res, err
	}
	if err := <-jobsBack; err != nil {
		return res, err
	}
	return res, m.stop(ctx, c, &res)
}

// deleteAll deletes the objects in the background and the watch's pods
// directly, with no grace period, again every 10 s until the watch sees
// no pod and the API server has none of the objects (at most w.patience),
// then stops the watch. Left to the garbage collector and the simulated
// kubelets' graceful stop, 5,120 pods took more than 15 minutes to go here.
func deleteAll(ctx context.Context, c *framework.Cluster, objs []client.Object, w *podWatch) {
	defer close(w.stop)
	var last time.Time
	for began := time.Now(); time.Since(began) < w.patience; time.Sleep(200 * time.Millisecond) {
		if len(w.store.List()) == 0 && allGone(ctx, c, objs) {
			return
		}
		if time.Since(last) < 10*time.Second {
			continue
		}
		last = time.Now()
		for _, o := range objs {
			_ = c.Objects.Delete(ctx, o, client.PropagationPolicy(metav1.DeletePropagationBackground))
		}
		_ = framework.RemovePods(ctx, c.Objects, w.pods(), 32)
	}
}

// allGone: the API server has none of the objects.
func allGone(ctx context.Context, c *framework.Cluster, objs []client.Object) bool {
	for _, o := range objs {
		got := o.DeepCopyObject().(client.Object)
		if err := c.Objects.Get(ctx, client.ObjectKeyFromObject(o), got); !apierrors.IsNotFound(err) {
			return false
		}
	}
	return true
}

// floorAgents makes the agents' and kubelets' writes, as many at once and
// at the rate the simulated agents do. It keeps each pod as its last write
// returned it, so that it reads nothing.
type floorAgents struct {
	c      client.Client
	mu     sync.Mutex
	latest map[types.UID]*corev1.Pod
}

func newFloorAgents(c *framework.Cluster) (*floorAgents, error) {
	cfg := *c.Config
	cfg.QPS, cfg.Burst = 500, 1000
	cl, err := client.New(&cfg, client.Options{Scheme: c.Objects.Scheme()})
	return &floorAgents{c: cl, latest: map[types.UID]*corev1.Pod{}}, err
}

func (f *floorAgents) each(ctx context.Context, pods []*corev1.Pod, do func(*corev1.Pod) error) error {
	errs := make([]error, len(pods))
	workqueue.ParallelizeUntil(ctx, floorWorkers, len(pods), func(i int) { errs[i] = do(pods[i]) })
	return errors.Join(errs...)
}

// restartTo: when exit, the agent exits with its restart code (the
// kubelet's two writes); then the (new) agent annotates the attempt.
func (f *floorAgents) restartTo(ctx context.Context, p *corev1.Pod, attempt int32, exit bool) error {
	if exit {
		if err := f.onConflictRetry(ctx, p, func(now *corev1.Pod) error {
			return f.writeStatus(ctx, now, sim.AgentRestartSteps(&now.Status, agent.DefaultExitCode, metav1.Now()))
		}); err != nil {
			return err
		}
	}
	target := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}}
	if err := f.c.Patch(ctx, target, client.RawPatch(types.MergePatchType, agent.AttemptPatch(attempt))); err != nil {
		return err
	}
	f.remember(target)
	return nil
}

// release: the agent's startup probe passes (the kubelet's three writes),
// on the pod as the restart left it.
func (f *floorAgents) release(ctx context.Context, p *corev1.Pod) error {
	f.mu.Lock()
	if last := f.latest[p.UID]; last != nil {
		p = last
	}
	f.mu.Unlock()
	return f.onConflictRetry(ctx, p, func(now *corev1.Pod) error {
		return f.writeStatus(ctx, now, sim.ReleaseSteps(&now.Status, metav1.Now()))
	})
}

// onConflictRetry runs write on p and, when another writer (the kubelet
// restarting the failed pod) came first, reads the pod and tries again.
func (f *floorAgents) onConflictRetry(ctx context.Context, p *corev1.Pod, write func(*corev1.Pod) error) error {
	key, again := client.ObjectKeyFromObject(p), false
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if again {
			p = &corev1.Pod{}
			if err := f.c.Get(ctx, key, p); err != nil {
				return err
			}
		}
		again = true
		return write(p)
	})
}

func (f *floorAgents) remember(p *corev1.Pod) {
	f.mu.Lock()
	f.latest[p.UID] = p
	f.mu.Unlock()
}

// writeStatus writes the kubelet's successive statuses of pod, as the
// simulated agents do.
func (f *floorAgents) writeStatus(ctx context.Context, pod *corev1.Pod, steps []*corev1.PodStatus) error {
	last, err := sim.WriteStatus(ctx, f.c, pod, steps)
	if err == nil {
		f.remember(last)
	}
	return err
}

// selfCPU is this process's CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
