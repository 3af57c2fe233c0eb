// Command hotswap measures recovery when no spare is left (issue 42): a
// 2-slice high-priority JobSet loses a host (fail-host: detected after
// slice health's 10 s NotReady grace) and runs again at its next attempt
// by one of three ways, interleaved round by round in one cluster:
//
//	spare      its group has a spare pool (the floor: repair as before)
//	hot-swap   no spare, the cloud's capacity exhausted, a low-priority
//	           1-slice JobSet holds the group's third pool: it is taken
//	cloud      no spare, no victim: it waits for the cloud to repair the
//	           broken pool (after the cluster's --repair-delay)
//
// -decisions N times only the choice of victims (placement.HotSwap) at
// 1,024 hosts, without a cluster.
//
// It reports seconds from the fault to all 4 pods Running at attempt 1,
// per way: median, min-max, N, and the ratio of hot-swap to spare.
//
//	go run ./bench/hotswap -rounds 3
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/test/framework"
)

const fleet = `apiVersion: multislice.dev/v1alpha1
kind: Fleet
groups:
- {name: g-spare, accelerator: tpu-v4-podslice, topology: 2x2x2, slices: 2, spares: 1}
- {name: g-swap, accelerator: tpu-v4-podslice, topology: 2x2x2, slices: 3}
- {name: g-cloud, accelerator: tpu-v4-podslice, topology: 2x2x2, slices: 2}
pools:
- {name: default-pool, machineType: e2-standard-8, numNodes: 1}
`

// groupHosts are the hosts of each group of the fleet (2 per pool).
var groupHosts = map[string]int{"g-spare": 6, "g-swap": 6, "g-cloud": 4}

func main() {
	bin := flag.String("bin", "bin", "directory with multislice and the control-plane binaries")
	rounds := flag.Int("rounds", 3, "interleaved rounds (each way once per round)")
	repairDelay := flag.Duration("repair-delay", 20*time.Second, "the simulated cloud's repair delay (the cloud way waits for it)")
	decisions := flag.Int("decisions", 0, "time only the choice of victims, this many times, at 1,024 simulated hosts (no cluster)")
	flag.Parse()
	if *decisions > 0 {
		decisionCost(min(*decisions, 100000))
		return
	}
	if *rounds < 1 || *rounds > 20 {
		fmt.Fprintln(os.Stderr, "-rounds: want 1 to 20")
		os.Exit(2)
	}
	if err := run(*bin, *rounds, *repairDelay); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(bin string, rounds int, repairDelay time.Duration) error {
	c, err := framework.Up(bin, fleet, nil, "--repair-delay="+repairDelay.String())
	if err != nil {
		return err
	}
	defer c.Down()
	ctx := context.Background()
	for name, value := range map[string]int32{"bench-high": 1000, "bench-low": 100} {
		if err := c.Objects.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}); err != nil {
			return err
		}
	}
	seed, err := os.ReadFile(filepath.Join(filepath.Dir(c.Bin), "examples", "seed-multislice-job.yaml"))
	if err != nil {
		return err
	}
	b := &bench{c: c, seed: string(seed), took: map[string][]time.Duration{}}
	load := framework.LoadAverage()
	for r := 0; r < rounds; r++ {
		for _, way := range []string{"spare", "hot-swap", "cloud"} {
			d, err := b.recover(ctx, way, r)
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", r, way, err)
			}
			b.took[way] = append(b.took[way], d)
			fmt.Printf("round %d %-9s all 4 pods Running at attempt 1 after %6.2fs\n", r, way, d.Seconds())
		}
	}
	fmt.Printf("\nload average before: %s, after: %s\n", load, framework.LoadAverage())
	for _, way := range []string{"spare", "hot-swap", "cloud"} {
		med, lo, hi := stats(b.took[way])
		fmt.Printf("%-9s median %6.2fs (%.2f-%.2f), N=%d\n", way, med, lo, hi, len(b.took[way]))
	}
	spare, _, _ := stats(b.took["spare"])
	swap, _, _ := stats(b.took["hot-swap"])
	fmt.Printf("hot-swap / spare = %.2fx (goal <= 1.5x)\n", swap/spare)
	return nil
}

type bench struct {
	c    *framework.Cluster
	seed string
	took map[string][]time.Duration
}

// recover runs one way: the high JobSet (and, for hot-swap, the low one)
// running, host 0 of its second slice failed, until all its pods run at
// attempt 1; then everything goes and the pools are whole again.
func (b *bench) recover(ctx context.Context, way string, round int) (time.Duration, error) {
	group := map[string]string{"spare": "g-spare", "hot-swap": "g-swap", "cloud": "g-cloud"}[way]
	high := b.jobSet(fmt.Sprintf("high-%d-%s", round, way), group, "bench-high", 2)
	objs := []*api.JobSet{high}
	if way == "hot-swap" {
		objs = append(objs, b.jobSet(fmt.Sprintf("low-%d", round), group, "bench-low", 1))
	}
	for _, js := range objs {
		if err := b.c.Objects.Create(ctx, js); err != nil {
			return 0, err
		}
	}
	defer b.cleanUp(ctx, objs, group)
	for _, js := range objs {
		want := int(js.Spec.ReplicatedJobs[0].Replicas) * 2
		if err := b.waitPods(ctx, js.Name, "0", want, 2*time.Minute); err != nil {
			return 0, err
		}
	}
	job, err := b.c.Client.BatchV1().Jobs("default").Get(ctx, high.Name+"-slice-1", metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	if way == "hot-swap" {
		if out, err := b.c.Run("chaos", "capacity", "--accelerator=tpu-v4-podslice", "--unavailable=2"); err != nil {
			return 0, fmt.Errorf("chaos capacity: %v\n%s", err, out)
		}
		defer b.c.Run("chaos", "capacity", "--accelerator=tpu-v4-podslice", "--unavailable=0")
	}
	if out, err := b.c.Run("chaos", "fail-host", "--nodepool", api.PinnedDomain(job)); err != nil {
		return 0, fmt.Errorf("chaos fail-host: %v\n%s", err, out)
	}
	began := time.Now()
	if err := b.waitPods(ctx, high.Name, "1", 4, 3*time.Minute); err != nil {
		return 0, err
	}
	return time.Since(began), nil
}

// jobSet is the seed as one of several sharing a fleet: n slices of
// group, priority class pc, and no affinity (placement keeps JobSets off
// each other's pools).
func (b *bench) jobSet(name, group, pc string, n int32) *api.JobSet {
	var js api.JobSet
	_ = yaml.Unmarshal([]byte(strings.ReplaceAll(b.seed, "multislice-job", name)), &js)
	js.Namespace = "default"
	js.Spec.FailurePolicy.MaxRestarts = 10
	rj := &js.Spec.ReplicatedJobs[0]
	rj.Replicas = n
	spec := &rj.Template.Spec.Template.Spec
	spec.Affinity, spec.PriorityClassName = nil, pc
	delete(spec.NodeSelector, gke.MultisliceGroupSizeLabel)
	spec.NodeSelector[gke.MultisliceGroupLabel] = group
	return &js
}

// cleanUp deletes the JobSets and their pods and waits until the group's
// pools are all healthy again (the cloud repaired the broken one).
func (b *bench) cleanUp(ctx context.Context, objs []*api.JobSet, group string) {
	for _, js := range objs {
		_ = b.c.Objects.Delete(ctx, js, client.PropagationPolicy(metav1.DeletePropagationForeground), client.GracePeriodSeconds(0))
		_ = b.c.Client.CoreV1().Pods("default").DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))},
			metav1.ListOptions{LabelSelector: api.JobSetNameKey + "=" + js.Name})
	}
	for t := 0; t < 240; t++ {
		nodes, err := b.c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: gke.MultisliceGroupLabel + "=" + group})
		pods, _ := b.c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: api.JobSetNameKey})
		if err == nil && len(nodes.Items) == groupHosts[group] && allReady(nodes.Items) && len(pods.Items) == 0 {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func allReady(nodes []corev1.Node) bool {
	for i := range nodes {
		if !gke.FitForWork(&nodes[i]) {
			return false
		}
	}
	return true
}

func (b *bench) waitPods(ctx context.Context, js, attempt string, want int, timeout time.Duration) error {
	began := time.Now()
	for time.Since(began) < timeout {
		pods, err := b.c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{
			LabelSelector: fmt.Sprintf("%s=%s,%s=%s", api.JobSetNameKey, js, api.RestartsKey, attempt)})
		n := 0
		for _, p := range pods.Items {
			if err == nil && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				n++
			}
		}
		if n >= want {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s: not %d pods Running at attempt %s within %s", js, want, attempt, timeout)
}

func stats(ds []time.Duration) (median, lo, hi float64) {
	s := make([]float64, len(ds))
	for i, d := range ds {
		s[i] = d.Seconds()
	}
	sort.Float64s(s)
	if len(s) == 0 {
		return 0, 0, 0
	}
	return s[len(s)/2], s[0], s[len(s)-1]
}
