package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/testobj"
	"github.com/multislice/multislice/test/framework"
)

// seedCopy is the seed's JobSet under another name (its affinity terms
// name the JobSet, so they follow), optionally finishing after run.
func seedCopy(t *testing.T, name, run string) *api.JobSet {
	data, err := os.ReadFile("../../examples/seed-multislice-job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var js api.JobSet
	if err := yaml.UnmarshalStrict([]byte(strings.ReplaceAll(string(data), "multislice-job", name)), &js); err != nil {
		t.Fatal(err)
	}
	js.Namespace = "default"
	if run != "" {
		js.Spec.ReplicatedJobs[0].Template.Spec.Template.Annotations = map[string]string{"multislice.dev/simulate-run": run}
	}
	return &js
}

// TestSeedDeadlockAvoided is the seed's deadlock scenario: two copies of
// the seed JobSet submitted at the same moment for one group of four pools.
// One runs whole; the other creates no pods and says why; when the first
// goes, the second runs. Ten rounds, never a partial placement.
func TestSeedDeadlockAvoided(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	c, _ := framework.StartCluster(t)
	cl := c.Objects
	ctx := context.Background()
	for round := 0; round < 10; round++ {
		a, b := seedCopy(t, fmt.Sprintf("a%d", round), ""), seedCopy(t, fmt.Sprintf("b%d", round), "")
		var wg sync.WaitGroup
		for _, js := range []*api.JobSet{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := cl.Create(ctx, js); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		var winner, loser *api.JobSet
		framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
			ra, rb := runningPods(t, c, a.Name), runningPods(t, c, b.Name)
			switch {
			case ra == 8 && rb == 0:
				winner, loser = a, b
			case rb == 8 && ra == 0:
				winner, loser = b, a
			}
			if ra > 0 && rb > 0 {
				t.Fatalf("round %d: partial placement: %d pods of %s and %d of %s Running", round, ra, a.Name, rb, b.Name)
			}
			return winner != nil, fmt.Sprintf("%s: %d Running, %s: %d Running", a.Name, ra, b.Name, rb)
		})
		framework.Eventually(t, 20*time.Second, func(ctx context.Context) (bool, string) {
			var got api.JobSet
			if err := cl.Get(ctx, client.ObjectKeyFromObject(loser), &got); err != nil {
				return false, err.Error()
			}
			cond := meta.FindStatusCondition(got.Status.Conditions, "TopologyAssigned")
			return cond != nil && cond.Status == metav1.ConditionFalse && strings.Contains(cond.Message, "needs 4 free tpu-v4-podslice 2x2x2 pools"),
				fmt.Sprintf("conditions of the waiting JobSet: %+v", got.Status.Conditions)
		})
		if n := scheduledPods(t, c, loser.Name); n != 0 {
			t.Fatalf("round %d: the waiting JobSet has %d pods scheduled", round, n)
		}
		deleted := time.Now()
		if err := cl.Delete(ctx, winner, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
			n := runningPods(t, c, loser.Name)
			return n == 8, fmt.Sprintf("%d of 8 pods of %s Running after %s was deleted", n, loser.Name, winner.Name)
		})
		t.Logf("round %d: %s ran %.1fs after %s was deleted", round, loser.Name, time.Since(deleted).Seconds(), winner.Name)
		if err := cl.Delete(ctx, loser, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
			n := scheduledPods(t, c, "")
			return n == 0, fmt.Sprintf("%d pods left after round %d", n, round)
		})
	}
}

// TestEightJobSetsOnFourGroups: eight 4-slice JobSets on four groups of four
// pools; at any moment no pool runs two Jobs and no JobSet spans groups;
// the JobSets that do not fit wait, and all complete.
func TestEightJobSetsOnFourGroups(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	fleetFile := framework.FleetFile(t, "{name: g1, accelerator: tpu-v4-podslice, topology: 2x2x2, slices: 4}", "{name: g2, accelerator: tpu-v4-podslice, topology: 2x2x2, slices: 4}", "{name: g3, accelerator: tpu-v4-podslice, topology: 2x2x2, slices: 4}", "{name: g4, accelerator: tpu-v4-podslice, topology: 2x2x2, slices: 4}")
	c, _ := framework.StartCluster(t, "--fleet", fleetFile)
	cl := c.Objects
	ctx := context.Background()
	var all []*api.JobSet
	for i := 0; i < 8; i++ {
		js := seedCopy(t, fmt.Sprintf("train-%d", i), "6s")
		if err := cl.Create(ctx, js); err != nil {
			t.Fatal(err)
		}
		all = append(all, js)
	}
	nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	poolOf, groupOf := map[string]string{}, map[string]string{}
	for _, n := range nodes.Items {
		poolOf[n.Name], groupOf[n.Name] = n.Labels[gke.NodePoolLabel], n.Labels[gke.MultisliceGroupLabel]
	}
	maxRunning := 0
	framework.Eventually(t, 3*time.Minute, func(ctx context.Context) (bool, string) {
		pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: api.JobSetNameKey})
		if err != nil {
			return false, err.Error()
		}
		jobOnPool, groupsOf := map[string]string{}, map[string]map[string]bool{}
		running := map[string]bool{}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning {
				continue
			}
			job, js := p.Labels["job-name"], p.Labels[api.JobSetNameKey]
			pool := poolOf[p.Spec.NodeName]
			if other, ok := jobOnPool[pool]; ok && other != job {
				t.Fatalf("pool %s runs two Jobs: %s and %s", pool, other, job)
			}
			jobOnPool[pool] = job
			if groupsOf[js] == nil {
				groupsOf[js] = map[string]bool{}
			}
			groupsOf[js][groupOf[p.Spec.NodeName]] = true
			if len(groupsOf[js]) > 1 {
				t.Fatalf("JobSet %s spans groups %v", js, groupsOf[js])
			}
			running[js] = true
		}
		maxRunning = max(maxRunning, len(running))
		done := 0
		for _, js := range all {
			var got api.JobSet
			if err := cl.Get(ctx, client.ObjectKeyFromObject(js), &got); err == nil && got.Status.TerminalState == "Completed" {
				done++
			}
		}
		return done == len(all), fmt.Sprintf("%d of %d JobSets completed", done, len(all))
	})
	if maxRunning > 4 {
		t.Errorf("%d JobSets ran at once on four groups", maxRunning)
	}
	t.Logf("all 8 JobSets completed; at most %d ran at once", maxRunning)
}

func runningPods(t *testing.T, c *framework.Cluster, jobset string) int {
	n := 0
	for _, p := range jobsetPods(t, c, jobset) {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

func scheduledPods(t *testing.T, c *framework.Cluster, jobset string) int {
	n := 0
	for _, p := range jobsetPods(t, c, jobset) {
		if p.Spec.NodeName != "" {
			n++
		}
	}
	return n
}

func jobsetPods(t *testing.T, c *framework.Cluster, jobset string) []corev1.Pod {
	sel := api.JobSetNameKey
	if jobset != "" {
		sel += "=" + jobset
	}
	pods, err := c.Client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// TestPlacementSeesOtherWorkloads: pools where another workload's TPU pods
// run (here plain Indexed Jobs, not JobSets) are not free. With two of the
// group's five pools busy, the seed waits and says so; when one is freed,
// it runs, and never on the pool still busy.
func TestPlacementSeesOtherWorkloads(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	c, _ := framework.StartCluster(t)
	ctx := context.Background()
	for _, pool := range []string{"multislice-group-1-np-0", "multislice-group-1-np-1"} {
		job := testobj.NewJob("default", "other-"+pool[len(pool)-4:]).Indexed(2).
			PodSpec(testobj.TPUPod("python:3.12", "tpu-v4-podslice", "2x2x2", "4")).Obj()
		job.Spec.Template.Spec.NodeSelector[gke.NodePoolLabel] = pool
		if _, err := c.Client.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
		pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{FieldSelector: "status.phase=Running"})
		if err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 4, fmt.Sprintf("%d of the other workloads' 4 pods Running", len(pods.Items))
	})

	seed := seedCopy(t, "seed", "")
	if err := c.Objects.Create(ctx, seed); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) (bool, string) {
		var got api.JobSet
		if err := c.Objects.Get(ctx, client.ObjectKeyFromObject(seed), &got); err != nil {
			return false, err.Error()
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, "TopologyAssigned")
		return cond != nil && cond.Status == metav1.ConditionFalse && strings.Contains(cond.Message, "no group has that many free now"),
			fmt.Sprintf("conditions: %+v", got.Status.Conditions)
	})
	if n := scheduledPods(t, c, seed.Name); n != 0 {
		t.Fatalf("the waiting seed has %d pods scheduled", n)
	}

	if err := c.Client.BatchV1().Jobs("default").Delete(ctx, "other-np-0", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
		n := runningPods(t, c, seed.Name)
		return n == 8, fmt.Sprintf("%d of 8 seed pods Running after a pool was freed", n)
	})
	for _, p := range jobsetPods(t, c, seed.Name) {
		if strings.HasPrefix(p.Spec.NodeName, "gke-multislice-group-1-np-1-") {
			t.Errorf("seed pod %s runs on the pool another workload holds (node %s)", p.Name, p.Spec.NodeName)
		}
	}
}

// TestRenamedGroupLabels: a fleet that names its multislice-group labels
// itself (groupLabels) starts the manager with them, so placement keeps a
// JobSet within one group: with team-a's first pool taken, a 2-slice
// JobSet runs on team-b's two pools, not across the groups.
func TestRenamedGroupLabels(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	const group, size = "example.com/slice-group", "example.com/slice-group-size"
	fleet := filepath.Join(t.TempDir(), "fleet.yaml")
	err := os.WriteFile(fleet, []byte(`apiVersion: multislice.dev/v1alpha1
kind: Fleet
groupLabels: {name: `+group+`, size: `+size+`}
groups:
- {name: team-a, accelerator: tpu-v4-podslice, topology: 2x2x2, slices: 2}
- {name: team-b, accelerator: tpu-v4-podslice, topology: 2x2x2, slices: 2}
pools:
- {name: default-pool, machineType: e2-standard-8, numNodes: 1}
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := framework.StartCluster(t, "--fleet", fleet)
	ctx := context.Background()
	for _, name := range []string{"one", "two"} {
		js := seedCopy(t, name, "")
		pod := &js.Spec.ReplicatedJobs[0].Template.Spec.Template
		pod.Spec.Affinity = nil // the seed's names MultisliceGroup
		delete(pod.Spec.NodeSelector, "MultisliceGroupSize")
		pod.Spec.NodeSelector[size] = "2"
		js.Spec.ReplicatedJobs[0].Replicas = map[string]int32{"one": 1, "two": 2}[name]
		if err := c.Objects.Create(ctx, js); err != nil {
			t.Fatal(err)
		}
		want := 2 * int(js.Spec.ReplicatedJobs[0].Replicas)
		framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
			n := runningPods(t, c, name)
			return n == want, fmt.Sprintf("%s: %d of %d pods Running", name, n, want)
		})
	}
	groups := map[string]bool{}
	for _, p := range jobsetPods(t, c, "two") {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		groups[n.Labels[group]] = true
	}
	if len(groups) != 1 {
		t.Errorf("JobSet two runs across groups %v: placement does not know the fleet's group label", groups)
	}
}
