// Command placement compares, on one local cluster in one run, the time
// from submission until all pods of 64 slices x 16 hosts (1,024 pods, v4
// 4x4x4) are Running:
//
//	floor     the same 64 Indexed Jobs and headless Service the JobSet
//	          controller would create (labels, hostnames, TPU environment),
//	          pinned to their pools by hand and created at once, with no
//	          controller involved (the JobSet exists but is managed by
//	          nobody);
//	ours      one exclusive-topology JobSet, placed by Multislice;
//	affinity  the same Jobs placed by inter-pod affinity and anti-affinity
//	          alone (upstream JobSet's original per-pod approach);
//	bare      64 minimal Indexed Jobs pinned by hand (no JobSet labels,
//	          hostnames or Service): what a JobSet's pods cost beyond that.
//
//	go run ./bench/placement -slices 64
//
// With -jobsets N it measures a queue instead (see queue.go): N one-slice
// JobSets at once and -queued JobSets of -queued-slices slices behind them:
//
//	go run ./bench/placement -slices 320 -jobsets 300 -queued 10 \
//	    -rounds warmup,ours,floor,floor,ours,ours,floor,floor,ours,ours,floor
//
// (five pairs run side by side, alternating which goes first; the summary
// is the median of the per-pair ratios)
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/controller/jobset/policy"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/testobj"
	"github.com/multislice/multislice/test/framework"
)

const hosts = 16 // v4 4x4x4

func main() {
	slices := flag.Int("slices", 64, "slices (node pools of 16 hosts)")
	bin := flag.String("bin", "bin", "directory with multislice and the control-plane binaries")
	rounds := flag.String("rounds", "warmup,floor,ours,affinity,bare,bare,affinity,ours,floor,floor,ours,affinity,bare",
		"scenarios in the order they run; warmup is a floor round whose time is discarded")
	jobsets := flag.Int("jobsets", 0, "one-slice JobSets submitted at once (0: one JobSet of -slices slices)")
	queued := flag.Int("queued", 10, "with -jobsets: JobSets queued behind them")
	queuedSlices := flag.Int("queued-slices", 16, "with -jobsets: slices of each queued JobSet")
	flag.Parse()
	if *slices < 1 || *slices > 640 || *jobsets < 0 || *jobsets > *slices || *queued < 0 || *queued > 100 || *queuedSlices < 1 || *queuedSlices > *slices {
		fmt.Fprintln(os.Stderr, "want 1 <= -slices <= 640, 0 <= -jobsets <= -slices, 0 <= -queued <= 100, 1 <= -queued-slices <= -slices")
		os.Exit(2)
	}
	q := queueFlags{jobsets: *jobsets, queued: *queued, queuedSlices: *queuedSlices}
	if err := run(*bin, *slices, strings.Split(*rounds, ","), q); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

type queueFlags struct{ jobsets, queued, queuedSlices int }

func run(bin string, slices int, order []string, q queueFlags) error {
	// It measures placement: slice health off, since at 5,120 simulated
	// hosts on two cores kwok's nodes flap NotReady under load. Arguments
	// in $MULTISLICE_MANAGER_ARGS (e.g. --pprof-bind-address) are kept.
	managerArgs := "MULTISLICE_MANAGER_ARGS=--no-slice-health " + os.Getenv("MULTISLICE_MANAGER_ARGS")
	c, err := framework.Up(bin, fmt.Sprintf(`apiVersion: multislice.dev/v1alpha1
kind: Fleet
groups:
- {name: big, accelerator: tpu-v4-podslice, topology: 4x4x4, slices: %d}
pools:
- {name: default-pool, machineType: e2-standard-8, numNodes: 1}
limits: {nodes: %d}
`, slices, slices*hosts+1), []string{managerArgs})
	if err != nil {
		return err
	}
	defer c.Down()
	ctx := context.Background()
	b := &bench{c: c, cs: c.Client, cl: c.Objects, slices: slices}
	// Pods are counted from a watch: listing 1,024 pods ten times a second
	// would load the apiserver more than some of the scenarios do.
	factory := informers.NewSharedInformerFactoryWithOptions(c.Client, 0, informers.WithNamespace("default"),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "bench=placement" }))
	b.pods = factory.Core().V1().Pods().Lister()
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	if q.jobsets > 0 {
		return runQueue(c, b, q.jobsets, q.queued, q.queuedSlices, order)
	}
	times := map[string][]time.Duration{}
	// The warm-up round pays for a fresh cluster's cold caches. Rounds of
	// one scenario vary by 10-20% on a 2-core machine, so scenarios are
	// interleaved and both the best and the median are reported.
	for _, scenario := range order {
		warmup := scenario == "warmup"
		if warmup {
			scenario = "floor"
		}
		cpu := c.CPU()
		began, err := b.submit(ctx, scenario)
		if err != nil {
			return fmt.Errorf("%s: %w", scenario, err)
		}
		took, err := b.waitRunning(ctx, began, framework.Patience(b.slices*hosts))
		if err != nil {
			return fmt.Errorf("%s: %w", scenario, err)
		}
		label := scenario
		if warmup {
			label = "warm-up"
		} else {
			times[scenario] = append(times[scenario], took)
		}
		fmt.Printf("%-8s all %d pods Running after %5.1fs (CPU: %s)\n", label, slices*hosts, took.Seconds(), c.CPUSince(cpu))
		if err := b.cleanup(ctx); err != nil {
			return err
		}
	}
	report(times)
	return nil
}

// report prints each scenario's rounds, best and median, and the ratios of
// both to the floor's.
func report(times map[string][]time.Duration) {
	var names []string
	for name, ts := range times {
		names = append(names, name)
		sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	}
	sort.Strings(names)
	best := func(name string) float64 { return times[name][0].Seconds() }
	median := func(name string) float64 { return times[name][len(times[name])/2].Seconds() }
	for _, name := range names {
		fmt.Printf("%-8s best %5.1fs  median %5.1fs  (%d rounds)", name, best(name), median(name), len(times[name]))
		if _, ok := times["floor"]; ok {
			fmt.Printf("  ratio to floor: best %.2f  median %.2f", best(name)/best("floor"), median(name)/median("floor"))
		}
		fmt.Println()
	}
}

type bench struct {
	c      *framework.Cluster
	cs     kubernetes.Interface
	cl     client.Client
	pods   corelisters.PodLister
	slices int
}

// submit creates the scenario's workload and returns when the clock started.
func (b *bench) submit(ctx context.Context, scenario string) (time.Time, error) {
	switch scenario {
	case "ours":
		began := time.Now()
		return began, b.cl.Create(ctx, b.jobSet(scenario, nil))
	case "floor", "affinity":
		jobs, svc, err := b.controllerJobs(ctx, scenario)
		if err != nil {
			return time.Time{}, err
		}
		for i, j := range jobs {
			if scenario == "floor" {
				pool := fmt.Sprintf("big-np-%d", i)
				api.Pin(j, gke.NodePoolLabel, pool)
			} else {
				j.Spec.Template.Spec.Affinity = exclusiveAffinity(j.Labels[api.JobKey])
			}
		}
		began := time.Now()
		if err := b.cl.Create(ctx, svc); err != nil {
			return began, err
		}
		return began, b.createAll(ctx, jobs)
	case "bare":
		jobs := make([]*batchv1.Job, b.slices)
		for i := range jobs {
			pod := podSpec()
			pod.NodeSelector[gke.NodePoolLabel] = fmt.Sprintf("big-np-%d", i)
			jobs[i] = &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bare-%d", i), Namespace: "default",
				Labels: map[string]string{"bench": "placement"}}, Spec: jobSpec(pod)}
		}
		began := time.Now()
		return began, b.createAll(ctx, jobs)
	}
	return time.Time{}, fmt.Errorf("unknown scenario %q (want floor, ours, affinity, bare or warmup)", scenario)
}

// controllerJobs creates a JobSet that no controller manages and returns
// the child Jobs and Service the JobSet controller would create for it
// (Decide is its whole policy), owned by it as they would be.
func (b *bench) controllerJobs(ctx context.Context, scenario string) ([]*batchv1.Job, *corev1.Service, error) {
	js := b.jobSet(scenario, ptr.To("multislice.dev/bench-by-hand"))
	if err := b.cl.Create(ctx, js); err != nil {
		return nil, nil, err
	}
	plan := policy.Decide(policy.Observed{JobSet: js, Now: time.Now()})
	if len(plan.Create) != b.slices || plan.Service == nil {
		return nil, nil, fmt.Errorf("the controller's plan has %d Jobs and service %v, want %d and one", len(plan.Create), plan.Service != nil, b.slices)
	}
	return plan.Create, plan.Service, nil
}

// createAll creates the Jobs at once, as the JobSet controller does: the
// fastest submission there is.
func (b *bench) createAll(ctx context.Context, jobs []*batchv1.Job) error {
	return framework.CreateAll(ctx, b.cl, jobs, len(jobs))
}

func (b *bench) jobSet(name string, managedBy *string) *api.JobSet {
	return &api.JobSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
			Annotations: map[string]string{api.ExclusiveKey: gke.NodePoolLabel}},
		Spec: api.JobSetSpec{ManagedBy: managedBy, ReplicatedJobs: []api.ReplicatedJob{{
			Name: "slice", Replicas: int32(b.slices), Template: batchv1.JobTemplateSpec{Spec: jobSpec(podSpec())},
		}}},
	}
}

func podSpec() corev1.PodSpec {
	spec := testobj.TPUPod("python:3.12", "tpu-v4-podslice", "4x4x4", "4")
	spec.TerminationGracePeriodSeconds = ptr.To(int64(0))
	framework.TolerateNodeOutages(&spec)
	return spec
}

func jobSpec(pod corev1.PodSpec) batchv1.JobSpec {
	return batchv1.JobSpec{
		CompletionMode: ptr.To(batchv1.IndexedCompletion), Parallelism: ptr.To(int32(hosts)), Completions: ptr.To(int32(hosts)),
		BackoffLimit: ptr.To(int32(0)),
		Template:     corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"bench": "placement"}}, Spec: pod},
	}
}

// exclusiveAffinity keeps a Job's pods in one node pool and out of every
// pool where another Job's pods run.
func exclusiveAffinity(jobKey string) *corev1.Affinity {
	term := func(reqs ...metav1.LabelSelectorRequirement) corev1.PodAffinityTerm {
		return corev1.PodAffinityTerm{TopologyKey: gke.NodePoolLabel, LabelSelector: &metav1.LabelSelector{MatchExpressions: reqs}}
	}
	return &corev1.Affinity{
		PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
			term(metav1.LabelSelectorRequirement{Key: api.JobKey, Operator: metav1.LabelSelectorOpIn, Values: []string{jobKey}})}},
		PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
			term(metav1.LabelSelectorRequirement{Key: api.JobKey, Operator: metav1.LabelSelectorOpNotIn, Values: []string{jobKey}},
				metav1.LabelSelectorRequirement{Key: api.JobKey, Operator: metav1.LabelSelectorOpExists})}},
	}
}

func (b *bench) waitRunning(ctx context.Context, began time.Time, timeout time.Duration) (time.Duration, error) {
	return b.waitPods(ctx, began, b.slices*hosts, func(*corev1.Pod) bool { return true }, timeout)
}

// waitPods returns how long after began want pods that count were Running.
func (b *bench) waitPods(ctx context.Context, began time.Time, want int, counts func(*corev1.Pod) bool, timeout time.Duration) (time.Duration, error) {
	for time.Since(began) < timeout {
		pods, err := b.pods.List(labels.Everything())
		if err != nil {
			return 0, err
		}
		n := 0
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning && counts(p) {
				n++
			}
		}
		if n >= want {
			return time.Since(began), nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return 0, fmt.Errorf("not all %d pods Running after %s", want, timeout)
}

func (b *bench) cleanup(ctx context.Context) error {
	bg := metav1.DeletePropagationBackground
	for i := 0; i < 1200; i++ {
		// Quorum reads, one object at most: the next round must not start
		// while anything of this one is left, and a list of 4,800 pods
		// twice a second was itself a load on the API server and etcd.
		one := metav1.ListOptions{LabelSelector: "bench=placement", Limit: 1}
		pods, err := b.cs.CoreV1().Pods("default").List(ctx, one)
		jobs, err2 := b.cs.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{Limit: 1})
		var sets api.JobSetList
		err3 := b.cl.List(ctx, &sets, client.InNamespace("default"), client.Limit(1))
		if err == nil && err2 == nil && err3 == nil && len(pods.Items)+len(jobs.Items)+len(sets.Items) == 0 {
			// kwok plays its pods' stages from a queue: after thousands of
			// pods went at once it went on patching them (404) for
			// minutes, and the next round's pods waited behind.
			framework.WaitStill(ctx, b.c.PodWrites, 5*time.Second, 5*time.Minute)
			return nil
		}
		// Again every 10 s: under load a collection delete of 310 JobSets
		// can time out part way, and what it left would wait for ever.
		// The pods go directly, not through the garbage collector, which
		// at 5,120 hosts took minutes for a few dozen JobSets' pods.
		if i%20 == 0 {
			_ = b.cl.DeleteAllOf(ctx, &api.JobSet{}, client.InNamespace("default"), client.PropagationPolicy(bg))
			_ = b.cs.BatchV1().Jobs("default").DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &bg}, metav1.ListOptions{})
			if all, err := b.cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "bench=placement"}); err == nil {
				left := make([]*corev1.Pod, len(all.Items))
				for j := range all.Items {
					left[j] = &all.Items[j]
				}
				_ = framework.RemovePods(ctx, b.cl, left, 32)
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("cleanup did not finish")
}
