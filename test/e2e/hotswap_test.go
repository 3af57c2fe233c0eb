package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/kueue"
	"github.com/multislice/multislice/internal/workload"
	"github.com/multislice/multislice/test/framework"
)

// TestHotSwap: a group of three pools and no spare, the cloud's capacity
// exhausted; a low-priority 1-slice JobSet and a high-priority 2-slice one
// fill it. A host of the high one fails: it takes the low one's pool and
// runs again; the low one says who took it, holds no pool, and runs
// again once capacity returns and the cloud repairs the broken pool.
func TestHotSwap(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	fleetFile := framework.FleetFile(t, "{name: multislice-group-1, accelerator: tpu-v4-podslice, topology: 2x2x2, slices: 3}")
	c, _ := framework.StartCluster(t, "--fleet", fleetFile, "--repair-delay=2s")
	lowPool := lowAndHigh(t, c, nil)
	c.MustRun("chaos", "capacity", "--accelerator=tpu-v4-podslice", "--unavailable=2")
	broken := poolOf(t, c, "high-slice-1")
	began := time.Now()
	c.MustRun("chaos", "fail-host", "--nodepool", broken)

	// The high one runs again, on its healthy pool and the low one's.
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
		pools := runningPoolsAt(t, c, "high", 1)
		return len(pools) == 2 && pools[lowPool] && !pools[broken], fmt.Sprintf("high's pods Running at attempt 1 on %v", pools)
	})
	t.Logf("hot-swap: high Running again on %s (low's pool) %.1fs after host 0 of %s failed (10 s of it the NotReady grace)",
		lowPool, time.Since(began).Seconds(), broken)
	// The decision that took the pools said so (TopologyAssigned reason
	// HotSwap, and its Warning event); the condition reads DomainsAssigned
	// again once the next decision finds the Jobs on their pools, so the
	// event is what stays.
	framework.Eventually(t, 10*time.Second, func(ctx context.Context) (bool, string) {
		evs, err := c.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=high"})
		if err != nil {
			return false, err.Error()
		}
		var reasons []string
		for _, e := range evs.Items {
			if e.Reason == api.HotSwapReason && strings.Contains(e.Message, "default/low") {
				return true, ""
			}
			reasons = append(reasons, e.Reason)
		}
		return false, fmt.Sprintf("high's events: %v, want %s naming default/low", reasons, api.HotSwapReason)
	})

	// The low one waits: it says who took its pool, and holds none.
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) (bool, string) {
		got := getJobSet(t, c, "low")
		cond := condition(got, string(api.JobSetHotSwapped))
		return cond != nil && cond.Status == metav1.ConditionTrue && strings.Contains(cond.Message, "default/high") &&
				scheduledPods(t, c, "low") == 0 && len(pinnedJobs(t, c, "low")) == 0,
			fmt.Sprintf("low: HotSwapped %+v, %d pods on nodes, pinned Jobs %v", cond, scheduledPods(t, c, "low"), pinnedJobs(t, c, "low"))
	})
	got := getJobSet(t, c, "low")
	if got.Status.RestartsCountTowardsMax != 0 || got.Status.Restarts != 1 {
		t.Errorf("low: restarts %d (towards max %d), want 1 (0): losing its pools is not its failure", got.Status.Restarts, got.Status.RestartsCountTowardsMax)
	}
	if out := c.MustRun("status", "low"); !strings.Contains(out, "default/high") {
		t.Errorf("multislice status low does not name the taker:\n%s", out)
	}

	// Capacity returns: the cloud repairs the broken pool, and low runs there.
	c.MustRun("chaos", "capacity", "--accelerator=tpu-v4-podslice", "--unavailable=0")
	waitPodsRunning(t, c, "low", 2, 90*time.Second)
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) (bool, string) {
		cond := condition(getJobSet(t, c, "low"), string(api.JobSetHotSwapped))
		return cond != nil && cond.Status == metav1.ConditionFalse, fmt.Sprintf("low's HotSwapped %+v", cond)
	})
	if p := poolOf(t, c, "low-slice-0"); p != broken {
		t.Errorf("low runs on %s, want the repaired %s", p, broken)
	}
	if n := runningPods(t, c, "high"); n != 4 {
		t.Errorf("high has %d pods Running after low came back, want 4", n)
	}
}

// lowAndHigh makes the PriorityClasses hotswap-low (100) and
// hotswap-high (1000), the 1-slice JobSet low and the 2-slice high with
// labels, waits until both run, and returns low's pool.
func lowAndHigh(t *testing.T, c *framework.Cluster, labels map[string]string) string {
	ctx := context.Background()
	for name, value := range map[string]int32{"hotswap-high": 1000, "hotswap-low": 100} {
		if err := c.Objects.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}); err != nil {
			t.Fatal(err)
		}
	}
	for _, js := range []*api.JobSet{prioritySeed(t, "low", "hotswap-low", 1), prioritySeed(t, "high", "hotswap-high", 2)} {
		js.Labels = labels
		if err := c.Objects.Create(ctx, js); err != nil {
			t.Fatal(err)
		}
	}
	waitPodsRunning(t, c, "low", 2, 90*time.Second)
	waitPodsRunning(t, c, "high", 4, 90*time.Second)
	return poolOf(t, c, "low-slice-0")
}

// prioritySeed is the seed JobSet as one of several sharing a group: n
// slices, priority class pc, and no affinity keeping other JobSets out of
// the group (placement keeps them off its pools).
func prioritySeed(t *testing.T, name, pc string, n int32) *api.JobSet {
	js := seedCopy(t, name, "")
	rj := &js.Spec.ReplicatedJobs[0]
	rj.Replicas = n
	spec := &rj.Template.Spec.Template.Spec
	spec.Affinity = nil
	spec.PriorityClassName = pc
	spec.NodeSelector[gke.MultisliceGroupSizeLabel] = "3"
	js.Spec.FailurePolicy.MaxRestarts = 10
	return js
}

// runningPoolsAt are the pools the JobSet's pods of one attempt run on.
func runningPoolsAt(t *testing.T, c *framework.Cluster, jobset string, attempt int) map[string]bool {
	pools := map[string]bool{}
	nodes := nodePools(t, c)
	for _, p := range jobsetPods(t, c, jobset) {
		if p.Status.Phase == "Running" && p.DeletionTimestamp == nil && p.Labels[api.RestartsKey] == fmt.Sprint(attempt) {
			pools[nodes[p.Spec.NodeName]] = true
		}
	}
	return pools
}

// nodePools maps each node to its pool.
func nodePools(t *testing.T, c *framework.Cluster) map[string]string {
	nodes, err := c.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, n := range nodes.Items {
		out[n.Name] = n.Labels[gke.NodePoolLabel]
	}
	return out
}

// pinnedJobs are the JobSet's Jobs pinned to a pool (they hold it).
func pinnedJobs(t *testing.T, c *framework.Cluster, jobset string) []string {
	var out []string
	for _, j := range jobsOf(t, c, jobset) {
		if j.Spec.Template.Spec.NodeSelector[gke.NodePoolLabel] != "" && j.DeletionTimestamp == nil {
			out = append(out, j.Name)
		}
	}
	return out
}

// TestHotSwapUnderKueue: TestHotSwap's two JobSets in Kueue's queue (pod
// PriorityClasses rank them for Kueue too). The low one, taken, is
// evicted through Kueue: its Workload records an eviction for the
// hot-swap (Kueue's reason Preempted, our message) and its quota is
// released; it requeues, and runs again once capacity returns.
func TestHotSwapUnderKueue(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	fleetFile := framework.FleetFile(t, "{name: multislice-group-1, accelerator: tpu-v4-podslice, topology: 2x2x2, slices: 3}")
	// A long pods-ready timeout: any eviction seen is the hot-swap's.
	c, _ := framework.StartCluster(t, "--kueue", "--fleet", fleetFile, "--repair-delay=2s", "--kueue-pods-ready-timeout=10m")
	c.MustRun("kueue", "init")
	lowPool := lowAndHigh(t, c, map[string]string{workload.QueueLabel: kueue.LocalQueueName})
	c.MustRun("chaos", "capacity", "--accelerator=tpu-v4-podslice", "--unavailable=2")
	c.MustRun("chaos", "fail-host", "--nodepool", poolOf(t, c, "high-slice-1"))
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
		pools := runningPoolsAt(t, c, "high", 1)
		return len(pools) == 2 && pools[lowPool], fmt.Sprintf("high's pods Running at attempt 1 on %v", pools)
	})
	dyn := dynamic.NewForConfigOrDie(c.Config)
	// Evicted by the hot-swap: Kueue stopped it and released its quota;
	// requeued, it is admitted again at once (the ClusterQueue has room),
	// and Kueue then keeps the eviction as "Previously: ...".
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
		ev := workloadCondition(workloadOf(t, dyn, "low"), "Evicted")
		msg, _ := ev["message"].(string)
		return strings.Contains(msg, "hot-swap: its pools were taken by default/high"), fmt.Sprintf("low's Workload: Evicted %v", ev)
	})
	c.MustRun("chaos", "capacity", "--accelerator=tpu-v4-podslice", "--unavailable=0")
	waitPodsRunning(t, c, "low", 2, 120*time.Second)
}

// TestPlannedMaintenance: `nodepool maintenance` on a pool the seed
// JobSet uses moves it to the spare before the maintenance starts; on a
// fleet with no spare and no JobSet of lower priority it says what
// blocks it, starts nothing, and --force starts it anyway.
func TestPlannedMaintenance(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	c, _ := framework.StartCluster(t, "--repair-delay=10m")
	ctx := context.Background()
	js := seedCopy(t, "multislice-job", "")
	if err := c.Objects.Create(ctx, js); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, ctx, c, 0, anyName)
	pool := poolOfSlice(t, ctx, c, 1)
	out := c.MustRun("nodepool", "maintenance", "--nodepool", pool)
	for _, want := range []string{"Notice given on " + pool, "Moved default/multislice-job off " + pool, "Maintenance started"} {
		if !strings.Contains(out, want) {
			t.Errorf("nodepool maintenance output lacks %q:\n%s", want, out)
		}
	}
	// The move came first: no pod was left on the pool when the
	// maintenance started (the command waits for that); attempt 1 then
	// runs on 4 pools, none of them the pool.
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) (bool, string) {
		pools := runningPoolsAt(t, c, "multislice-job", 1)
		return len(pools) == 4 && !pools[pool], fmt.Sprintf("attempt 1 runs on %v, want 4 pools without %s", pools, pool)
	})

	// Now no pool is free (the spare took slice 1) and nothing ranks lower.
	other := poolOfSlice(t, ctx, c, 2)
	out, err := c.Run("nodepool", "maintenance", "--nodepool", other, "--timeout=6s")
	if err == nil || !strings.Contains(out, "cannot move: group multislice-group-1 has no healthy free pool") {
		t.Errorf("maintenance with no spare and no victim: err %v, want it refused saying what blocks it:\n%s", err, out)
	}
	if n := getNode(t, c, "gke-"+other+"-0"); n.Labels[gke.ActiveMaintenanceLabel] != "" {
		t.Errorf("the blocked maintenance started anyway on %s", other)
	}
	out = c.MustRun("nodepool", "maintenance", "--nodepool", other, "--force")
	if !strings.Contains(out, "--force") || !strings.Contains(out, "Maintenance started") {
		t.Errorf("--force did not start it:\n%s", out)
	}
}

func getNode(t *testing.T, c *framework.Cluster, name string) *corev1.Node {
	n, err := c.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
