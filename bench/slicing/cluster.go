package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slicev1beta1 "github.com/multislice/multislice/api/accelerator/v1beta1"
	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/agent"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/slicing"
	"github.com/multislice/multislice/internal/workload"
	"github.com/multislice/multislice/test/framework"
)

// clusterFleet holds both sides: a block of six 4x4x4 cubes (two 4x4x8
// slices and a spare pair) and three fixed 4x4x8 pools (two and a spare).
const clusterFleet = `apiVersion: multislice.dev/v1alpha1
kind: Fleet
blocks:
- {name: block-1, subBlocks: 6, layout: 1x1x6}
pools:
- {name: fixed-0, accelerator: tpu7x, topology: 4x4x8}
- {name: fixed-1, accelerator: tpu7x, topology: 4x4x8}
- {name: fixed-2, accelerator: tpu7x, topology: 4x4x8}
- {name: default-pool, machineType: e2-standard-8, numNodes: 1}
capacity:
  tpu7x: 64
`

// onCluster runs rounds of a 2 x 4x4x8 JobSet (64 pods) on dynamic cubes
// and on fixed pools, interleaved: seconds from apply to all Running, then
// one host of slice 0 failed and seconds to all Running at the next
// attempt (in place: all Ready at in-place attempt 1), with the pods
// recreated (new UIDs).
func onCluster(bin string, rounds int, inPlace bool) error {
	abs, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	// The repair comes after the 10 s NotReady grace, so the manager, not
	// the repair tearing the pool down, sees each fault (as TestAutoRepair).
	args := []string{"--repair-delay=12s"}
	if inPlace {
		args = append(args, "--feature-gates=InPlaceRestart=true")
	}
	c, err := framework.Up(abs, clusterFleet, nil, args...)
	if err != nil {
		return err
	}
	defer c.Down()
	ctx := context.Background()
	results := map[string][][2]time.Duration{}
	fmt.Printf("%-8s %-6s %12s %12s %10s\n", "round", "kind", "start (s)", "recover (s)", "recreated")
	for r := 0; r < rounds; r++ {
		for _, kind := range []string{"fixed", "dynamic"} {
			start, recover, recreated, err := round(ctx, c, kind, fmt.Sprintf("%s-%d", kind[:3], r), inPlace)
			if err != nil {
				return err
			}
			results[kind] = append(results[kind], [2]time.Duration{start, recover})
			fmt.Printf("%-8d %-6s %12.2f %12.2f %10d\n", r, kind, start.Seconds(), recover.Seconds(), recreated)
		}
	}
	for _, kind := range []string{"fixed", "dynamic"} {
		fmt.Printf("%-7s start %s; recover %s\n", kind, summary(results[kind], 0), summary(results[kind], 1))
	}
	return nil
}

func summary(rs [][2]time.Duration, i int) string {
	var v []time.Duration
	for _, r := range rs {
		v = append(v, r[i])
	}
	slices.Sort(v)
	return fmt.Sprintf("median %.2fs (min %.2f, max %.2f, N=%d)", v[len(v)/2].Seconds(), v[0].Seconds(), v[len(v)-1].Seconds(), len(v))
}

func round(ctx context.Context, c *framework.Cluster, kind, name string, inPlace bool) (start, recover time.Duration, recreated int, err error) {
	js, err := workload.Build(workload.Spec{Name: name, Namespace: "default", TPUType: "tpu7x-4x4x8", Slices: 2, Command: "python3 train.py",
		Image: "python:3.12", MaxRestarts: 3, SuperSlicing: kind == "dynamic"})
	if err != nil {
		return 0, 0, 0, err
	}
	if inPlace {
		framework.InPlace(js, agent.ContainerName)
	}
	began := time.Now()
	if err := c.Objects.Create(ctx, js); err != nil {
		return 0, 0, 0, err
	}
	if err := waitRunning(ctx, c.Client, name, func(p *corev1.Pod) bool { return p.Labels[api.RestartsKey] == "0" }, 64, 3*time.Minute); err != nil {
		return 0, 0, 0, fmt.Errorf("%w; %s", err, why(ctx, c, name))
	}
	start = time.Since(began)
	job, err := c.Client.BatchV1().Jobs("default").Get(ctx, name+"-slice-0", metav1.GetOptions{})
	if err != nil {
		return 0, 0, 0, err
	}
	pool := api.PinnedDomain(job)
	if parts := slicing.PinnedPartitions(job); len(parts) > 0 {
		pool = parts[0]
	}
	before, err := podUIDs(ctx, c.Client, name)
	if err != nil {
		return 0, 0, 0, err
	}
	began = time.Now()
	if out, err := c.Run("chaos", "fail-host", "--nodepool", pool); err != nil {
		return 0, 0, 0, fmt.Errorf("chaos: %v\n%s", err, out)
	}
	next := func(p *corev1.Pod) bool { return p.Labels[api.RestartsKey] == "1" }
	if inPlace {
		next = func(p *corev1.Pod) bool { return p.Annotations[api.InPlaceRestartAttemptKey] == "1" && podReady(p) }
	}
	if err := waitRunning(ctx, c.Client, name, next, 64, 3*time.Minute); err != nil {
		return 0, 0, 0, fmt.Errorf("%w; %s", err, why(ctx, c, name))
	}
	recover = time.Since(began)
	after, err := podUIDs(ctx, c.Client, name)
	if err != nil {
		return 0, 0, 0, err
	}
	for uid := range after {
		if !before[uid] {
			recreated++
		}
	}
	_ = c.Objects.Delete(ctx, js, client.PropagationPolicy(metav1.DeletePropagationForeground), client.GracePeriodSeconds(0))
	_ = c.Client.CoreV1().Pods("default").DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))},
		metav1.ListOptions{LabelSelector: api.JobSetNameKey + "=" + name})
	// The next round starts on a whole fleet: the failed host repaired and
	// Ready, no pod and no Slice left.
	for t := 0; t < 240 && !whole(ctx, c, name); t++ {
		time.Sleep(500 * time.Millisecond)
	}
	return start, recover, recreated, nil
}

// podUIDs are the UIDs of the JobSet's pods that are not going.
func podUIDs(ctx context.Context, cs kubernetes.Interface, js string) (map[types.UID]bool, error) {
	pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: api.JobSetNameKey + "=" + js})
	if err != nil {
		return nil, err
	}
	out := map[types.UID]bool{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out[p.UID] = true
		}
	}
	return out, nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// why is what a JobSet that did not start says: its conditions, and the
// fleet's pools.
func why(ctx context.Context, c *framework.Cluster, name string) string {
	var js api.JobSet
	if err := c.Objects.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &js); err != nil {
		return err.Error()
	}
	pools, _ := c.Run("nodepool", "list")
	return fmt.Sprintf("conditions %+v\n%s", js.Status.Conditions, pools)
}

func whole(ctx context.Context, c *framework.Cluster, name string) bool {
	out, err := c.Run("nodepool", "list", "-o", "jsonpath={.items[*].healthy}")
	if err != nil || strings.Contains(out, "false") {
		return false
	}
	pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: api.JobSetNameKey + "=" + name})
	if err != nil || len(pods.Items) > 0 {
		return false
	}
	var slices slicev1beta1.SliceList
	if err := c.Objects.List(ctx, &slices); err != nil || len(slices.Items) > 0 {
		return false
	}
	nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return false
	}
	for i := range nodes.Items {
		if !gke.FitForWork(&nodes.Items[i]) || !gke.NodeReady(&nodes.Items[i]) {
			return false
		}
	}
	return true
}

// waitRunning waits for n Running pods of the JobSet that are at the
// attempt (at).
func waitRunning(ctx context.Context, cs kubernetes.Interface, js string, at func(*corev1.Pod) bool, n int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: api.JobSetNameKey + "=" + js})
		if err == nil {
			running := 0
			for i := range pods.Items {
				if p := &pods.Items[i]; p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && at(p) {
					running++
				}
			}
			if running == n {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s: %d pods not Running at the attempt within %s", js, n, limit)
}
