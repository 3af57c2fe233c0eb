// Package logs implements `multislice logs`: a JobSet's container logs by
// slice and worker, each line prefixed with where it came from, following
// the workers across restarts (recreated pods and in-place restarts).
package logs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/cli/jobsetlist"
	"github.com/multislice/multislice/internal/view"
)

// Options is what `multislice logs` was asked.
type Options struct {
	F                 *cli.Factory
	Namespace, JobSet string
	// Slice and Worker select one slice (the Job's global index) and one
	// worker (the pod's completion index); -1 is every one.
	Slice, Worker int
	// Container is the container to read ("" = the pod's default one).
	Container string
	Follow    bool
	// Attempt selects the pods of one JobSet restart attempt (-1 = the
	// current one); with Follow, the attempts after it follow.
	Attempt int
	// Previous reads each worker's previous container instance, as
	// `kubectl logs -p`: what ran before its last in-place restart.
	Previous   bool
	Timestamps bool
}

// NewCmdLogs is `multislice logs`; runF (nil: logsRun) gets the options.
func NewCmdLogs(f *cli.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{F: f}
	if runF == nil {
		runF = logsRun
	}
	cmd := &cobra.Command{
		Use:               "logs JOBSET",
		ValidArgsFunction: jobsetlist.CompleteNames(f),
		Short:             "Print a JobSet's logs by slice and worker, following them across restarts",
		Example: `  multislice logs multislice-job                       every worker of the current attempt
  multislice logs multislice-job --slice 1 --worker 0  one worker
  multislice logs multislice-job --slice 1 -f          follow slice 1, across restarts
  multislice logs multislice-job --attempt 2           the pods of restart attempt 2, if they still exist
  multislice logs multislice-job -p                    before the last in-place restart`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.JobSet, o.Namespace = args[0], f.Namespace(o.Namespace)
			return runF(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&o.Namespace, "namespace", "n", "", "namespace of the JobSet (default: the context's)")
	fl.IntVar(&o.Slice, "slice", -1, "only this slice (the child Job's global index, as in `multislice status JOBSET`)")
	fl.IntVar(&o.Worker, "worker", -1, "only this worker of each slice (TPU_WORKER_ID)")
	fl.StringVarP(&o.Container, "container", "c", "", "container (default: the pod's default container, else its first)")
	fl.BoolVarP(&o.Follow, "follow", "f", false, "stream the logs, and the next attempts' as the workers restart, until the JobSet finishes")
	fl.IntVar(&o.Attempt, "attempt", -1, "restart attempt whose pods to read (default: the current one)")
	fl.BoolVarP(&o.Previous, "previous", "p", false, "each worker's previous container instance (before its last in-place restart)")
	fl.BoolVar(&o.Timestamps, "timestamps", false, "prefix each line with its time")
	return cmd
}

// Validate refuses contradictory or impossible flags, naming the flag.
func (o *Options) Validate() error {
	switch {
	case o.Slice < -1:
		return fmt.Errorf("--slice %d: a slice index is 0 or more", o.Slice)
	case o.Worker < -1:
		return fmt.Errorf("--worker %d: a worker index is 0 or more", o.Worker)
	case o.Attempt < -1:
		return fmt.Errorf("--attempt %d: an attempt is 0 or more", o.Attempt)
	case o.Previous && o.Follow:
		return errors.New("--previous with --follow: a previous instance has ended; drop one of them")
	case o.Previous && o.Attempt >= 0:
		return errors.New("--previous with --attempt: --previous reads the instance before the last in-place restart; use one of them")
	}
	return nil
}

// Selects says whether o wants the pod's log: its slice, its worker, and an
// attempt from minAttempt on (only minAttempt itself unless following).
func (o *Options) Selects(w view.PodWorker, minAttempt int) bool {
	if (o.Slice >= 0 && w.Slice != o.Slice) || (o.Worker >= 0 && w.Worker != o.Worker) {
		return false
	}
	if o.Follow {
		return w.Attempt >= minAttempt
	}
	return w.Attempt == minAttempt
}

// logsRun prints the logs.
func logsRun(ctx context.Context, o *Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	cs, err := o.F.Clientset()
	if err != nil {
		return err
	}
	c, err := o.F.Objects()
	if err != nil {
		return err
	}
	var js api.JobSet
	if err := c.Get(ctx, types.NamespacedName{Namespace: o.Namespace, Name: o.JobSet}, &js); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("no JobSet %s in namespace %s: list them with `multislice workload list -n %s`", o.JobSet, o.Namespace, o.Namespace)
		}
		return err
	}
	if slices := sliceCount(&js); o.Slice >= slices {
		return fmt.Errorf("--slice %d: JobSet %s has slices 0..%d", o.Slice, o.JobSet, slices-1)
	}
	attempt := o.Attempt
	if attempt < 0 {
		attempt = int(js.Status.Restarts)
	}
	p := &printer{out: o.F.Out, opts: o, cs: cs}
	if o.Follow {
		return p.follow(ctx, c, attempt)
	}
	pods, err := cs.CoreV1().Pods(o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: api.JobSetNameKey + "=" + o.JobSet})
	if err != nil {
		return err
	}
	var picked []corev1.Pod
	for _, pod := range pods.Items {
		if pod.DeletionTimestamp == nil && o.Selects(view.PodWorkerOf(&pod), attempt) {
			picked = append(picked, pod)
		}
	}
	if len(picked) == 0 {
		return fmt.Errorf("no pod of JobSet %s matches (slice %s, worker %s, attempt %d): a recreated attempt's pods are deleted with their logs; `multislice status %s` shows the current ones",
			o.JobSet, anyIndex(o.Slice), anyIndex(o.Worker), attempt, o.JobSet)
	}
	sort.Slice(picked, func(i, j int) bool {
		a, b := view.PodWorkerOf(&picked[i]), view.PodWorkerOf(&picked[j])
		return a.Slice < b.Slice || (a.Slice == b.Slice && a.Worker < b.Worker)
	})
	var errs []error
	for i := range picked {
		if err := p.stream(ctx, &picked[i], false); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func anyIndex(n int) string {
	if n < 0 {
		return "any"
	}
	return strconv.Itoa(n)
}

// sliceCount is the number of child Jobs the JobSet asks for.
func sliceCount(js *api.JobSet) int {
	n := 0
	for _, r := range js.Spec.ReplicatedJobs {
		n += int(r.Replicas)
	}
	return n
}

// printer writes whole prefixed lines from concurrent streams.
type printer struct {
	mu   sync.Mutex
	out  io.Writer
	opts *Options
	cs   kubernetes.Interface
}

// stream copies one container instance's log, following it if asked.
func (p *printer) stream(ctx context.Context, pod *corev1.Pod, follow bool) error {
	container := p.opts.Container
	if container == "" {
		container = view.DefaultContainer(pod)
	}
	w := view.PodWorkerOf(pod)
	req := p.cs.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{
		Container: container, Follow: follow, Previous: p.opts.Previous, Timestamps: p.opts.Timestamps})
	rc, err := req.Stream(ctx)
	if err != nil {
		return fmt.Errorf("slice %d worker %d (pod %s): %w", w.Slice, w.Worker, pod.Name, err)
	}
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	prefix := w.Prefix()
	for sc.Scan() {
		p.mu.Lock()
		fmt.Fprintf(p.out, "%s%s\n", prefix, sc.Text())
		p.mu.Unlock()
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("slice %d worker %d (pod %s): %w", w.Slice, w.Worker, pod.Name, err)
	}
	return nil
}

// follow streams every selected worker's container instance as it starts:
// the current ones, then those of each restart (a recreated pod, or an
// in-place restart of the same pod), until the JobSet finishes or goes.
func (p *printer) follow(ctx context.Context, c client.Client, fromAttempt int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sel := labels.SelectorFromSet(labels.Set{api.JobSetNameKey: p.opts.JobSet}).String()
	factory := informers.NewSharedInformerFactoryWithOptions(p.cs, 0, informers.WithNamespace(p.opts.Namespace),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = sel }))
	inf := factory.Core().V1().Pods().Informer()
	var (
		mu      sync.Mutex
		started = map[instance]bool{}
		active  sync.WaitGroup
	)
	consider := func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok || pod.DeletionTimestamp != nil || !p.opts.Selects(view.PodWorkerOf(pod), fromAttempt) {
			return
		}
		container := p.opts.Container
		if container == "" {
			container = view.DefaultContainer(pod)
		}
		restarts, ok := startedInstance(pod, container)
		if !ok {
			return
		}
		key := instance{pod.UID, restarts}
		mu.Lock()
		defer mu.Unlock()
		if started[key] {
			return
		}
		started[key] = true
		active.Add(1)
		go func() {
			defer active.Done()
			if err := p.stream(ctx, pod, true); err != nil {
				p.mu.Lock()
				fmt.Fprintln(p.out, view.PodWorkerOf(pod).Prefix()+"(log unavailable: "+err.Error()+")")
				p.mu.Unlock()
			}
		}()
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: consider, UpdateFunc: func(_, o any) { consider(o) }}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	// Shutdown waits for the informer, which stops with ctx: cancel first.
	defer func() { cancel(); factory.Shutdown() }()
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return ctx.Err()
	}
	// The JobSet's end (or deletion) ends the follow once the last lines are in.
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
		var js api.JobSet
		err := c.Get(ctx, types.NamespacedName{Namespace: p.opts.Namespace, Name: p.opts.JobSet}, &js)
		if apierrors.IsNotFound(err) || (err == nil && js.Status.TerminalState != "") {
			done := make(chan struct{})
			go func() { active.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
			case <-ctx.Done():
			}
			return nil
		}
	}
}

// instance is one container instance of one pod.
type instance struct {
	pod      types.UID
	restarts int32
}

// startedInstance is the restart count of the container's current
// instance, if it has started (running or ended).
func startedInstance(pod *corev1.Pod, container string) (int32, bool) {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for _, st := range list {
			if st.Name == container && (st.State.Running != nil || st.State.Terminated != nil) {
				return st.RestartCount, true
			}
		}
	}
	return 0, false
}
