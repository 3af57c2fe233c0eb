package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slicev1beta1 "github.com/multislice/multislice/api/accelerator/v1beta1"
	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/kueue"
	"github.com/multislice/multislice/internal/slicing"
	"github.com/multislice/multislice/test/framework"
)

// dynamicExamples are the examples TestDynamicSlicing applies (its fleet).
var dynamicExamples = []string{"examples/fleet-dynamic.yaml", "examples/super-slicing-jobset.yaml"}

// TestDynamicSlicing: on examples/fleet-dynamic.yaml (one block of six
// 4x4x4 sub-blocks laid out 1x2x3), xpk's super-slicing JobSet (two 4x4x8
// slices, the accelerator alone selected), rendered by `workload create
// --super-slicing` and applied with kubectl, reaches 64/64 pods Running on
// two Ready Slices of two adjacent cubes each, with the stitched slice's
// TPU environment. A host of one slice fails: that Slice fails, the
// JobSet restarts, and the Slice is formed again from healthy cubes. A
// sub-slicing JobSet (2 x 2x2x4) then shares the block, never a host.
func TestDynamicSlicing(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	kubectl := requireKubectl(t)
	root, _ := filepath.Abs("../..")
	c, _ := framework.StartCluster(t, "--fleet", filepath.Join(root, "examples/fleet-dynamic.yaml"))
	if out := c.MustRun("status"); !regexp.MustCompile(`block-1\s+6\s+6\s`).MatchString(out) {
		t.Errorf("status shows no block of six healthy sub-blocks:\n%s", out)
	}

	// workload create renders what xpk renders; kubectl applies it.
	apply := func(args ...string) {
		t.Helper()
		rendered := c.MustRun(append(append([]string{"workload", "create"}, args...), "--command=python3 train.py", "--dry-run", "-o", "yaml")...)
		file := filepath.Join(t.TempDir(), "jobset.yaml")
		if err := os.WriteFile(file, []byte(rendered), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := kubectl(c, "apply", "-f", file); err != nil {
			t.Fatalf("kubectl apply of workload create %v: %v\n%s", args, err, out)
		}
	}
	apply("dyn", "--super-slicing", "--tpu-type=tpu7x-4x4x8", "--num-slices=2", "--max-restarts=3")
	pods := dynamicRunning(t, c, "dyn", 0, 64)
	formed := readySlices(t, c, "dyn", 2)
	for _, s := range formed {
		if s.Spec.Topology != "4x4x8" || len(s.Spec.PartitionIDs) != 2 || !adjacent(t, c, s.Spec.PartitionIDs) {
			t.Errorf("slice %s: %s of %v, want 4x4x8 of two adjacent cubes", s.Name, s.Spec.Topology, s.Spec.PartitionIDs)
		}
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range pods[0].Spec.Containers[0].Env {
		env[e.Name] = e
	}
	if env["TPU_TOPOLOGY"].Value != "4x4x8" || strings.Count(env["TPU_WORKER_HOSTNAMES"].Value, ",") != 31 {
		t.Errorf("a pod of a stitched slice has TPU_TOPOLOGY %q and %d worker hostnames, want 4x4x8 and 32",
			env["TPU_TOPOLOGY"].Value, strings.Count(env["TPU_WORKER_HOSTNAMES"].Value, ",")+1)
	}

	// One host of slice 0 fails: its Slice fails with the reason, the
	// JobSet restarts, and slice 0 is formed again without the failed cube.
	failed := formed["dyn-slice-0"].Spec.PartitionIDs[0]
	began := time.Now()
	c.MustRun("chaos", "fail-host", "--nodepool", failed)
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) (bool, string) {
		var s slicev1beta1.Slice
		err := c.Objects.Get(ctx, client.ObjectKey{Name: formed["dyn-slice-0"].Name}, &s)
		if err != nil {
			return true, "" // already let go, to be formed again
		}
		cond := meta.FindStatusCondition(s.Status.Conditions, slicev1beta1.ReadyCondition)
		return cond != nil && cond.Reason == slicev1beta1.FailedReason && strings.Contains(cond.Message, failed), fmt.Sprintf("conditions %+v", s.Status.Conditions)
	})
	dynamicRunning(t, c, "dyn", 1, 64)
	t.Logf("one host of a 4x4x8 slice failed: all 64 pods Running at attempt 1 after %.1fs", time.Since(began).Seconds())
	again := readySlices(t, c, "dyn", 2)
	if slices.Contains(again["dyn-slice-0"].Spec.PartitionIDs, failed) {
		t.Errorf("slice 0 formed again on the failed cube %s: %v", failed, again["dyn-slice-0"].Spec.PartitionIDs)
	}
	if !slices.Equal(again["dyn-slice-1"].Spec.PartitionIDs, formed["dyn-slice-1"].Spec.PartitionIDs) {
		t.Errorf("slice 1 moved from %v to %v, though its cubes are healthy", formed["dyn-slice-1"].Spec.PartitionIDs, again["dyn-slice-1"].Spec.PartitionIDs)
	}

	// A sub-slicing JobSet (two 2x2x4 sub-slices: four hosts of one cube
	// each) shares the block with it and never a host.
	apply("small", "--sub-slicing", "--tpu-type=tpu7x-2x2x4", "--num-slices=2")
	small := dynamicRunning(t, c, "small", 0, 8)
	subs := readySlices(t, c, "small", 2)
	if a, b := subs["small-slice-0"], subs["small-slice-1"]; a.Spec.Topology != "2x2x4" || a.Annotations[slicev1beta1.QuartersAnnotation] == b.Annotations[slicev1beta1.QuartersAnnotation] {
		t.Errorf("sub-slices %s (%v, quarters %s) and %s (%v, quarters %s)", a.Name, a.Spec.PartitionIDs, a.Annotations[slicev1beta1.QuartersAnnotation],
			b.Name, b.Spec.PartitionIDs, b.Annotations[slicev1beta1.QuartersAnnotation])
	}
	hosts := map[string]string{}
	for _, p := range append(dynamicRunning(t, c, "dyn", 1, 64), small...) {
		if other, taken := hosts[p.Spec.NodeName]; taken {
			t.Errorf("host %s runs %s and %s", p.Spec.NodeName, other, p.Name)
		}
		hosts[p.Spec.NodeName] = p.Name
	}

	// Deleted, the JobSets let their Slices go.
	if out, err := kubectl(c, "delete", "jobset", "dyn", "small", "--wait=true", "--timeout=60s"); err != nil {
		t.Fatalf("delete: %v\n%s", err, out)
	}
	noSlices := func(ctx context.Context) (bool, string) {
		var list slicev1beta1.SliceList
		if err := c.Objects.List(ctx, &list); err != nil {
			return false, err.Error()
		}
		return len(list.Items) == 0, fmt.Sprintf("%d slices left", len(list.Items))
	}
	framework.Eventually(t, 30*time.Second, noSlices)

	// The example, as its comment says.
	example := filepath.Join(root, "examples/super-slicing-jobset.yaml")
	if out, err := kubectl(c, "apply", "-f", example); err != nil {
		t.Fatalf("kubectl apply -f examples/super-slicing-jobset.yaml: %v\n%s", err, out)
	}
	dynamicRunning(t, c, "super-slicing", 0, 64)
	readySlices(t, c, "super-slicing", 2)
	if out, err := kubectl(c, "delete", "-f", example, "--wait=true", "--timeout=60s"); err != nil {
		t.Fatalf("delete: %v\n%s", err, out)
	}
	framework.Eventually(t, 30*time.Second, noSlices)
}

// TestDynamicSlicingUnderKueue: on examples/fleet-dynamic.yaml with
// Kueue, `kueue init` makes the block a flavor scheduled by xpk's
// super-slice Topology (Kueue's topology-aware scheduling) and asks the
// slice admission check (accelerator.gke.io/slice, the manager's) on it.
// xpk's super-slicing JobSet, queued, is admitted only once its two
// Slices, formed from the hosts Kueue chose, are Ready, and its 64 pods
// run on them. A host fails: the check sends the Workload back to Kueue,
// and at its next admission new Slices form from healthy cubes. A
// sub-slicing JobSet, queued too, then shares the block, never a host.
func TestDynamicSlicingUnderKueue(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	kubectl := requireKubectl(t)
	root, _ := filepath.Abs("../..")
	c, _ := framework.StartCluster(t, "--kueue", "--fleet", filepath.Join(root, "examples/fleet-dynamic.yaml"))
	if out := c.MustRun("kueue", "init"); !strings.Contains(out, "tpu7x-block-1") {
		t.Fatalf("kueue init makes no flavor of block-1:\n%s", out)
	}
	queued := func(args ...string) {
		t.Helper()
		rendered := c.MustRun(append(append([]string{"workload", "create"}, args...),
			"--kueue-queue", kueue.LocalQueueName, "--command=python3 train.py", "--dry-run", "-o", "yaml")...)
		file := filepath.Join(t.TempDir(), "jobset.yaml")
		if err := os.WriteFile(file, []byte(rendered), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := kubectl(c, "apply", "-f", file); err != nil {
			t.Fatalf("kubectl apply of workload create %v: %v\n%s", args, err, out)
		}
	}
	began := time.Now()
	queued("dyn", "--super-slicing", "--tpu-type=tpu7x-4x4x8", "--num-slices=2", "--max-restarts=3")
	dyn := dynamic.NewForConfigOrDie(c.Config)
	var w *unstructured.Unstructured
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
		w = workloadOf(t, dyn, "dyn")
		checks, _, _ := unstructured.NestedSlice(w.Object, "status", "admissionChecks")
		return admitted(w), fmt.Sprintf("Workload %s: admitted %v, checks %v", w.GetName(), admitted(w), checks)
	})
	formed := readySlices(t, c, "dyn", 2)
	admittedAt, _ := time.Parse(time.RFC3339, workloadCondition(w, "Admitted")["lastTransitionTime"].(string))
	for _, s := range formed {
		readyAt := meta.FindStatusCondition(s.Status.Conditions, slicev1beta1.ReadyCondition).LastTransitionTime.Time
		if s.Annotations[slicev1beta1.WorkloadAnnotation] != w.GetName() || readyAt.After(admittedAt) {
			t.Errorf("slice %s (for Workload %q) Ready at %s, the Workload admitted at %s: want it formed by the check, Ready first",
				s.Name, s.Annotations[slicev1beta1.WorkloadAnnotation], readyAt, admittedAt)
		}
	}
	dynamicRunning(t, c, "dyn", -1, 64)
	t.Logf("through Kueue and the slice check: applied -> 64/64 Running in %.1fs", time.Since(began).Seconds())

	// A host of slice 0 fails: its Slice fails, the check has Kueue
	// requeue the Workload, and new Slices form from the hosts Kueue
	// chooses next, none on the failed cube.
	failed := formed["dyn-slice-0"].Spec.PartitionIDs[0]
	began = time.Now()
	c.MustRun("chaos", "fail-host", "--nodepool", failed)
	framework.Eventually(t, 120*time.Second, func(ctx context.Context) (bool, string) {
		var list slicev1beta1.SliceList
		if err := c.Objects.List(ctx, &list, client.MatchingLabels{slicev1beta1.JobSetNameLabel: "dyn"}); err != nil {
			return false, err.Error()
		}
		var ready []string
		for _, s := range list.Items {
			if meta.IsStatusConditionTrue(s.Status.Conditions, slicev1beta1.ReadyCondition) && !slices.Contains(s.Spec.PartitionIDs, failed) && s.DeletionTimestamp == nil {
				ready = append(ready, s.Name)
			}
		}
		return len(ready) == 2, fmt.Sprintf("Ready slices without cube %s: %v", failed, ready)
	})
	dynamicRunning(t, c, "dyn", -1, 64)
	t.Logf("through Kueue: one host failed -> 64/64 Running on new Slices after %.1fs", time.Since(began).Seconds())
	// Kueue's record of the eviction: the check's Retry, or Kueue's own
	// topology-aware node-failure handling when it sees the NotReady
	// host first (one hop against the check's two: node, Slice, check).
	// Either sends the Workload back to Kueue; both are GKE's behaviour.
	ev := workloadCondition(workloadOf(t, dyn, "dyn"), "Evicted")
	msg, _ := ev["message"].(string)
	switch {
	case strings.Contains(msg, "admission check"):
		t.Logf("the Workload was sent back to Kueue by the slice check")
	case strings.Contains(msg, "unhealthy node"), strings.Contains(msg, "node failures"): // one host, or several (the repair)
		t.Logf("the Workload was sent back to Kueue by its node-failure handling")
	default:
		t.Errorf("the Workload was not sent back to Kueue: Evicted %v", ev)
	}
	// The simulated cloud repairs the failed cube (every host recreated)
	// 20 s after the fault; a JobSet Kueue places on it before that loses
	// its hosts to the repair. Wait for it, so what follows is decided on a
	// whole fleet.
	waitCubeRepaired(t, c, failed, began)

	// A sub-slicing JobSet (two 2x2x4: a quarter of a cube each) through
	// Kueue shares the block with it, never a host.
	queued("small", "--sub-slicing", "--tpu-type=tpu7x-2x2x4", "--num-slices=2")
	small := dynamicRunning(t, c, "small", -1, 8)
	subs := readySlices(t, c, "small", 2)
	for _, s := range subs {
		if s.Annotations[slicev1beta1.WorkloadAnnotation] == "" || s.Annotations[slicev1beta1.QuartersAnnotation] == "" {
			t.Errorf("sub-slice %s: annotations %v, want formed by the check, one quarter", s.Name, s.Annotations)
		}
	}
	hosts := map[string]string{}
	for _, p := range append(dynamicRunning(t, c, "dyn", -1, 64), small...) {
		if other, taken := hosts[p.Spec.NodeName]; taken {
			t.Errorf("host %s runs %s and %s", p.Spec.NodeName, other, p.Name)
		}
		hosts[p.Spec.NodeName] = p.Name
	}
}

// dynamicRunning waits for n Running pods of the JobSet's attempt (any
// attempt: -1) and checks that each runs on a host of its Job's Slice.
func dynamicRunning(t *testing.T, c *framework.Cluster, name string, attempt, n int) []corev1.Pod {
	t.Helper()
	var running []corev1.Pod
	selector := fmt.Sprintf("%s=%s", api.JobSetNameKey, name)
	if attempt >= 0 {
		selector += fmt.Sprintf(",%s=%d", api.RestartsKey, attempt)
	}
	framework.Eventually(t, 90*time.Second, func(ctx context.Context) (bool, string) {
		pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err.Error()
		}
		running = running[:0]
		var others []string // what a timeout shows of the pods not Running
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running = append(running, p)
			} else if len(others) < 4 {
				others = append(others, fmt.Sprintf("%s (%s on %q, deleting %v, attempt %s)", p.Name, p.Status.Phase, p.Spec.NodeName,
					p.DeletionTimestamp != nil, p.Labels[api.RestartsKey]))
			}
		}
		js := getJobSet(t, c, name)
		return len(running) == n, fmt.Sprintf("%d of %d pods Running at attempt %d, others %v; conditions %+v", len(running), n, attempt, others, js.Status.Conditions)
	})
	nodes, err := c.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cubeOf := map[string]string{}
	for _, nd := range nodes.Items {
		cubeOf[nd.Name] = nd.Labels[gke.PartitionCubeLabel]
	}
	for _, p := range running {
		j, err := c.Client.BatchV1().Jobs("default").Get(context.Background(), p.Labels["job-name"], metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if parts := slicing.PinnedPartitions(j); !slices.Contains(parts, cubeOf[p.Spec.NodeName]) {
			t.Errorf("pod %s runs on %s (cube %q), outside its Slice's partitions %v", p.Name, p.Spec.NodeName, cubeOf[p.Spec.NodeName], parts)
		}
	}
	return running
}

// readySlices waits for n Ready Slices of the JobSet, by Job name.
func readySlices(t *testing.T, c *framework.Cluster, name string, n int) map[string]slicev1beta1.Slice {
	t.Helper()
	out := map[string]slicev1beta1.Slice{}
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) (bool, string) {
		var list slicev1beta1.SliceList
		if err := c.Objects.List(ctx, &list, client.MatchingLabels{slicev1beta1.JobSetNameLabel: name}); err != nil {
			return false, err.Error()
		}
		clear(out)
		for _, s := range list.Items {
			if meta.IsStatusConditionTrue(s.Status.Conditions, slicev1beta1.ReadyCondition) {
				out[s.Labels[slicev1beta1.JobNameLabel]] = s
			}
		}
		return len(out) == n, fmt.Sprintf("%d of %d slices Ready (%d in all)", len(out), n, len(list.Items))
	})
	return out
}

// adjacent: the cubes' positions differ by one along one axis.
func adjacent(t *testing.T, c *framework.Cluster, cubes []string) bool {
	t.Helper()
	var pos []slicing.Pos
	for _, id := range cubes {
		nodes, err := c.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: gke.PartitionCubeLabel + "=" + id, Limit: 1})
		if err != nil || len(nodes.Items) == 0 {
			t.Fatalf("nodes of cube %s: %v", id, err)
		}
		p, err := slicing.ParsePos(nodes.Items[0].Labels[slicev1beta1.PartitionPositionLabel])
		if err != nil {
			t.Fatal(err)
		}
		pos = append(pos, p)
	}
	d := 0
	for a := range 3 {
		d += max(pos[0][a]-pos[1][a], pos[1][a]-pos[0][a])
	}
	return d == 1
}

// waitCubeRepaired waits until the simulated cloud has recreated every
// host of the cube (node pool) after since, and they are Ready.
func waitCubeRepaired(t *testing.T, c *framework.Cluster, cube string, since time.Time) {
	t.Helper()
	framework.Eventually(t, 90*time.Second, func(ctx context.Context) (bool, string) {
		nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: gke.NodePoolLabel + "=" + cube})
		if err != nil {
			return false, err.Error()
		}
		var old []string
		for _, n := range nodes.Items {
			if n.CreationTimestamp.Time.Before(since.Truncate(time.Second)) || !ready(n) {
				old = append(old, n.Name)
			}
		}
		return len(nodes.Items) > 0 && len(old) == 0, fmt.Sprintf("cube %s: %d hosts, not yet recreated and Ready: %v", cube, len(nodes.Items), old)
	})
}
