package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/kueue"
	"github.com/multislice/multislice/internal/localcluster/sim"
	"github.com/multislice/multislice/internal/workload"
	"github.com/multislice/multislice/test/framework"
)

// podsReady is TestKueue's Kueue waitForPodsReady timeout.
const podsReady = 20 * time.Second

var (
	workloadsGVR     = schema.GroupVersionResource{Group: kueue.Group, Version: "v1beta2", Resource: "workloads"}
	clusterQueuesGVR = schema.GroupVersionResource{Group: kueue.Group, Version: "v1beta2", Resource: "clusterqueues"}
)

// TestKueue: Kueue as a component of the local cluster admits seed
// JobSets by the quota `kueue init` made from the fleet (one group of 4+1
// v4-16 slices: quota for one seed JobSet): the second waits suspended and
// runs when the first goes; a higher priority preempts it and it resumes
// on healthy pools; a slice fault restarts it as without Kueue; `workload
// create --kueue-queue` runs through Kueue; a JobSet evicted and
// re-admitted on another group's flavor keeps only that flavor's selector;
// and a second cluster dispatches to this one through MultiKueue.
func TestKueue(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	// The seed's fleet, with room for a second group's four pools.
	fleet := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(fleet, []byte(`apiVersion: multislice.dev/v1alpha1
kind: Fleet
groups:
- {name: multislice-group-1, accelerator: tpu-v4-podslice, topology: 2x2x2, slices: 4, spares: 1}
pools:
- {name: default-pool, machineType: e2-standard-8, numNodes: 1}
capacity:
  tpu-v4-podslice: 8
`), 0o644); err != nil {
		t.Fatal(err)
	}
	c, out := framework.StartCluster(t, "--kueue", "--fleet", fleet, "--kueue-pods-ready-timeout", podsReady.String())
	if !strings.Contains(out, "Kueue") {
		t.Errorf("up --kueue does not say it installs Kueue:\n%s", out)
	}
	if st := c.MustRun("status"); !strings.Contains(st, "kueue") {
		t.Errorf("status does not show kueue:\n%s", st)
	}
	out = c.MustRun("kueue", "init")
	for _, want := range []string{"multislice-group-1", "40", kueue.ClusterQueueName} {
		if !strings.Contains(out, want) {
			t.Errorf("kueue init output lacks %q:\n%s", want, out)
		}
	}
	dyn := dynamic.NewForConfigOrDie(c.Config)
	ctx := context.Background()
	cl := c.Objects

	// Quota for one: the second waits suspended, holding nothing.
	// Created in turn: Kueue orders a queue by creation time, to the second.
	first, second := queuedSeed(t, "seed-a", ""), queuedSeed(t, "seed-b", "")
	if err := cl.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	waitPodsRunning(t, c, "seed-a", 8, 90*time.Second)
	if err := cl.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if js := getJobSet(t, c, "seed-b"); !ptr.Deref(js.Spec.Suspend, false) || runningPods(t, c, "seed-b") != 0 {
		t.Errorf("seed-b runs beside seed-a: suspend %v, %d pods Running", js.Spec.Suspend, runningPods(t, c, "seed-b"))
	}
	if w := workloadOf(t, dyn, "seed-b"); admitted(w) {
		t.Errorf("seed-b's Workload is admitted with no quota left")
	}
	began := time.Now()
	if err := cl.Delete(ctx, first, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
		err := cl.Get(ctx, client.ObjectKeyFromObject(first), &api.JobSet{})
		return err != nil && client.IgnoreNotFound(err) == nil, "seed-a not gone yet"
	})
	gone := time.Since(began)
	waitPodsRunning(t, c, "seed-b", 8, 90*time.Second)
	t.Logf("first deleted -> gone in %s -> second 8/8 Running in %s", gone.Round(10*time.Millisecond), time.Since(began).Round(10*time.Millisecond))

	// A higher priority preempts it; it resumes when that one goes, every
	// pod on a Ready node of the group.
	high := queuedSeed(t, "seed-high", "high")
	began = time.Now()
	if err := cl.Create(ctx, high); err != nil {
		t.Fatal(err)
	}
	waitPodsRunning(t, c, "seed-high", 8, 90*time.Second)
	t.Logf("high priority created -> 8/8 Running in %s", time.Since(began).Round(10*time.Millisecond))
	if js := getJobSet(t, c, "seed-b"); !ptr.Deref(js.Spec.Suspend, false) {
		t.Errorf("seed-b was not suspended by the higher priority")
	}
	if err := cl.Delete(ctx, high, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	waitPodsRunning(t, c, "seed-b", 8, 90*time.Second)
	onHealthyGroup(t, c, "seed-b", "multislice-group-1")

	// A slice fault under Kueue restarts as without it, still admitted.
	restarts := getJobSet(t, c, "seed-b").Status.Restarts
	c.MustRun("chaos", "fail-pod", "--nodepool", poolOf(t, c, "seed-b-slice-1"))
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
		js := getJobSet(t, c, "seed-b")
		return js.Status.Restarts > restarts && runningPods(t, c, "seed-b") == 8 && !ptr.Deref(js.Spec.Suspend, false),
			fmt.Sprintf("restarts %d, %d pods Running, suspend %v", js.Status.Restarts, runningPods(t, c, "seed-b"), js.Spec.Suspend)
	})
	if w := workloadOf(t, dyn, "seed-b"); !admitted(w) {
		t.Errorf("seed-b's Workload lost its admission with a slice restart")
	}
	if out := c.MustRun("status", "seed-b"); !strings.Contains(out, "KUEUE: Workload ") || !strings.Contains(out, ": admitted") {
		t.Errorf("multislice status seed-b does not show its Workload admitted:\n%s", out)
	}
	if err := cl.Delete(ctx, getJobSet(t, c, "seed-b"), client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}

	notPlaceable(t, c, dyn)

	// xpk's path: workload create --kueue-queue, with a priority.
	out = c.MustRun("workload", "create", "xpk-run", "--tpu-type=v4-16", "--num-slices=2", "--command=sleep 3600",
		"--kueue-queue="+kueue.LocalQueueName, "--priority=medium")
	waitPodsRunning(t, c, "xpk-run", 4, 90*time.Second)
	w := workloadOf(t, dyn, "xpk-run")
	ref, _, _ := unstructured.NestedStringMap(w.Object, "spec", "priorityClassRef")
	if !admitted(w) || ref["kind"] != "WorkloadPriorityClass" || ref["name"] != "medium" {
		t.Errorf("xpk-run's Workload: admitted %v, priorityClassRef %v, want WorkloadPriorityClass medium", admitted(w), ref)
	}
	c.MustRun("workload", "delete", "xpk-run")

	flavorChange(t, c, dyn)
	multiKueue(t, c)
}

// notPlaceable: a JobSet outside Kueue holds four of the group's five
// pools; Kueue admits a queued one (its quota counts chips, not free
// pools), placement holds it back and says why, and after the pods-ready
// timeout Kueue evicts it, giving its quota back. When the pools free up
// it is admitted again and runs.
func notPlaceable(t *testing.T, c *framework.Cluster, dyn dynamic.Interface) {
	ctx := context.Background()
	squatter := seedCopy(t, "squatter", "") // no queue: not Kueue's
	if err := c.Objects.Create(ctx, squatter); err != nil {
		t.Fatal(err)
	}
	waitPodsRunning(t, c, "squatter", 8, 90*time.Second)
	if err := c.Objects.Create(ctx, queuedSeed(t, "stuck", "")); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) (bool, string) {
		js := getJobSet(t, c, "stuck")
		cond := meta.FindStatusCondition(js.Status.Conditions, "TopologyAssigned")
		return !ptr.Deref(js.Spec.Suspend, true) && cond != nil && cond.Reason == api.InsufficientCapacityReason && strings.Contains(cond.Message, "in one multislice group; no group has that many free now"),
			fmt.Sprintf("suspend %v, conditions %+v", js.Spec.Suspend, js.Status.Conditions)
	})
	began := time.Now()
	framework.Eventually(t, podsReady+30*time.Second, func(ctx context.Context) (bool, string) {
		w := workloadOf(t, dyn, "stuck")
		evicted := workloadCondition(w, "Evicted")
		return evicted["status"] == "True" && evicted["reason"] == "PodsReadyTimeout" && ptr.Deref(getJobSet(t, c, "stuck").Spec.Suspend, false),
			fmt.Sprintf("Workload's Evicted condition %v", evicted)
	})
	t.Logf("admitted, not placeable: evicted by Kueue %s after placement said why", time.Since(began).Round(time.Second))
	if err := c.Objects.Delete(ctx, squatter, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	waitPodsRunning(t, c, "stuck", 8, 90*time.Second)
	if err := c.Objects.Delete(ctx, getJobSet(t, c, "stuck"), client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
}

// flavorChange adds a second group (a flavor of its own), admits a seed
// JobSet on the first group's flavor, evicts it, takes the first flavor's
// chips away and lets it be admitted again: its Jobs carry only the second
// group's selector and its pods run there.
func flavorChange(t *testing.T, c *framework.Cluster, dyn dynamic.Interface) {
	ctx := context.Background()
	for i := 0; i < 4; i++ {
		c.MustRun("nodepool", "create", fmt.Sprintf("g2-np-%d", i), "--machine-type=ct4p-hightpu-4t", "--tpu-topology=2x2x2",
			"--node-labels=MultisliceGroup=multislice-group-2,MultisliceGroupSize=4")
	}
	out := c.MustRun("kueue", "init")
	if !strings.Contains(out, "multislice-group-2") {
		t.Fatalf("kueue init after new pools lacks the new group's flavor:\n%s", out)
	}
	js := queuedSeed(t, "seed-f", "")
	if err := c.Objects.Create(ctx, js); err != nil {
		t.Fatal(err)
	}
	waitPodsRunning(t, c, "seed-f", 8, 90*time.Second)
	wantGroup := func(group string) {
		t.Helper()
		jobs, err := c.Client.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{LabelSelector: api.JobSetNameKey + "=seed-f"})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs.Items {
			if got := j.Spec.Template.Spec.NodeSelector[gke.MultisliceGroupLabel]; got != group {
				t.Errorf("job %s selects group %q, want only %q (%v)", j.Name, got, group, j.Spec.Template.Spec.NodeSelector)
			}
		}
		onHealthyGroup(t, c, "seed-f", group)
	}
	wantGroup("multislice-group-1")

	w := workloadOf(t, dyn, "seed-f")
	setActive := func(active bool) {
		t.Helper()
		patch := fmt.Sprintf(`{"spec":{"active":%v}}`, active)
		if _, err := dyn.Resource(workloadsGVR).Namespace("default").Patch(ctx, w.GetName(), types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setActive(false)
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
		js := getJobSet(t, c, "seed-f")
		return ptr.Deref(js.Spec.Suspend, false) && runningPods(t, c, "seed-f") == 0,
			fmt.Sprintf("suspend %v, %d pods Running", js.Spec.Suspend, runningPods(t, c, "seed-f"))
	})
	// The first group's flavor loses its chips; the second has them.
	cq, err := dyn.Resource(clusterQueuesGVR).Get(ctx, kueue.ClusterQueueName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	groups, _, _ := unstructured.NestedSlice(cq.Object, "spec", "resourceGroups")
	flavors, _, _ := unstructured.NestedSlice(groups[0].(map[string]any), "flavors")
	for _, f := range flavors {
		f := f.(map[string]any)
		if f["name"] != "multislice-group-1" {
			continue
		}
		for _, r := range f["resources"].([]any) {
			if r := r.(map[string]any); r["name"] == gke.TPUResource {
				r["nominalQuota"] = "0"
			}
		}
	}
	_ = unstructured.SetNestedSlice(groups[0].(map[string]any), flavors, "flavors")
	_ = unstructured.SetNestedSlice(cq.Object, groups, "spec", "resourceGroups")
	if _, err := dyn.Resource(clusterQueuesGVR).Update(ctx, cq, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	setActive(true)
	waitPodsRunning(t, c, "seed-f", 8, 90*time.Second)
	wantGroup("multislice-group-2")
	if err := c.Objects.Delete(ctx, getJobSet(t, c, "seed-f"), client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
}

// multiKueue: a second local cluster with Kueue and the same queues;
// `kueue connect` makes it a MultiKueue manager of worker (TestKueue's
// cluster). A seed JobSet submitted to the manager runs 8/8 on the worker,
// none of its pods in the manager; its status (a restart, then success)
// comes back; deleting it in the manager deletes it on the worker.
func multiKueue(t *testing.T, worker *framework.Cluster) {
	fleet := framework.FleetFile(t, "{name: multislice-group-1, accelerator: tpu-v4-podslice, topology: 2x2x2, slices: 4}")
	mgr, _ := framework.StartCluster(t, "--kueue", "--fleet", fleet)
	mgr.MustRun("kueue", "init")
	out := mgr.MustRun("kueue", "connect", "--worker-kubeconfig", filepath.Join(worker.Home, "kubeconfig"))
	if !strings.Contains(out, "connected") {
		t.Errorf("kueue connect: %s", out)
	}
	ctx := context.Background()
	js := queuedSeed(t, "remote", "")
	// Each worker sleeps a bit, then succeeds: the JobSet completes.
	js.Spec.ReplicatedJobs[0].Template.Spec.Template.Annotations = map[string]string{sim.RunAnnotation: "40s"}
	// Kueue's webhook gives a JobSet to MultiKueue once its own cache knows
	// the ClusterQueue's MultiKueue check, which may be a moment after
	// connect saw the check active (CI saw a JobSet created at once run in
	// the manager): wait until a dry run is given to it.
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
		dry := js.DeepCopy()
		if err := mgr.Objects.Create(ctx, dry, client.DryRunAll); err != nil {
			return false, err.Error()
		}
		return ptr.Deref(dry.Spec.ManagedBy, "") == kueue.ManagedByMultiKueue, fmt.Sprintf("a dry run's managedBy %q", ptr.Deref(dry.Spec.ManagedBy, ""))
	})
	if err := mgr.Objects.Create(ctx, js); err != nil {
		t.Fatal(err)
	}
	if got := getJobSet(t, mgr, "remote"); ptr.Deref(got.Spec.ManagedBy, "") != kueue.ManagedByMultiKueue {
		t.Errorf("manager's JobSet managedBy %q, want %s", ptr.Deref(got.Spec.ManagedBy, ""), kueue.ManagedByMultiKueue)
	}
	waitPodsRunning(t, worker, "remote", 8, 120*time.Second)
	if n := len(jobsetPods(t, mgr, "remote")); n != 0 {
		t.Errorf("%d pods of the JobSet in the manager cluster, want none", n)
	}
	// A restart on the worker is mirrored back.
	worker.MustRun("chaos", "fail-pod", "--nodepool", poolOf(t, worker, "remote-slice-1"))
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
		got := getJobSet(t, mgr, "remote")
		return got.Status.Restarts >= 1, fmt.Sprintf("manager's status: restarts %d, conditions %+v", got.Status.Restarts, got.Status.Conditions)
	})
	framework.Eventually(t, 120*time.Second, func(ctx context.Context) (bool, string) {
		got := getJobSet(t, mgr, "remote")
		return got.Status.TerminalState == string(api.JobSetCompleted), fmt.Sprintf("manager's status: terminal %q, conditions %+v", got.Status.TerminalState, got.Status.Conditions)
	})
	if n := len(jobsetPods(t, mgr, "remote")); n != 0 {
		t.Errorf("%d pods of the JobSet in the manager cluster, want none", n)
	}
	// Deleting it in the manager deletes it on the worker.
	if err := mgr.Objects.Delete(ctx, getJobSet(t, mgr, "remote")); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 90*time.Second, func(ctx context.Context) (bool, string) {
		var got api.JobSet
		err := worker.Objects.Get(ctx, client.ObjectKey{Namespace: "default", Name: "remote"}, &got)
		return client.IgnoreNotFound(err) == nil && err != nil, fmt.Sprintf("worker's JobSet still there: %v", err)
	})
	handMadeQueues(t, mgr, worker)
}

// handMadeQueues is a new user's try (issue 42): a ClusterQueue made by
// hand (v1beta1, no admission checks) and its LocalQueue lq here; connect
// says the worker lacks lq and exits non-zero; with the same queues made
// on the worker it connects, and a seed JobSet in lq runs there.
func handMadeQueues(t *testing.T, mgr, worker *framework.Cluster) {
	ctx := context.Background()
	v1beta1 := func(resource string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: kueue.Group, Version: "v1beta1", Resource: resource}
	}
	queues := func(c *framework.Cluster) {
		dyn := dynamic.NewForConfigOrDie(c.Config)
		for _, o := range []struct {
			gvr schema.GroupVersionResource
			ns  string
			obj map[string]any
		}{
			{v1beta1("resourceflavors"), "", map[string]any{"kind": "ResourceFlavor", "metadata": map[string]any{"name": "hand-flavor"}}},
			{v1beta1("clusterqueues"), "", map[string]any{"kind": "ClusterQueue", "metadata": map[string]any{"name": "cq"},
				"spec": map[string]any{"namespaceSelector": map[string]any{}, "resourceGroups": []any{map[string]any{
					"coveredResources": []any{"cpu", "memory", "google.com/tpu"},
					"flavors": []any{map[string]any{"name": "hand-flavor", "resources": []any{
						map[string]any{"name": "cpu", "nominalQuota": "100"}, map[string]any{"name": "memory", "nominalQuota": "1000Gi"},
						map[string]any{"name": "google.com/tpu", "nominalQuota": "100"}}}}}}}}},
			{v1beta1("localqueues"), "default", map[string]any{"kind": "LocalQueue", "metadata": map[string]any{"name": "lq", "namespace": "default"},
				"spec": map[string]any{"clusterQueue": "cq"}}},
		} {
			o.obj["apiVersion"] = kueue.Group + "/v1beta1"
			if _, err := dyn.Resource(o.gvr).Namespace(o.ns).Create(ctx, &unstructured.Unstructured{Object: o.obj}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	queues(mgr)
	out, err := mgr.Run("kueue", "connect", "--worker-kubeconfig", filepath.Join(worker.Home, "kubeconfig"), "--cluster-queue", "cq")
	if err == nil || !strings.Contains(out, "the worker has no LocalQueue default/lq") {
		t.Errorf("connect to a worker without lq: err %v, want it to say what the worker lacks:\n%s", err, out)
	}
	queues(worker)
	if out := mgr.MustRun("kueue", "connect", "--worker-kubeconfig", filepath.Join(worker.Home, "kubeconfig"), "--cluster-queue", "cq"); !strings.Contains(out, "connected") {
		t.Errorf("kueue connect: %s", out)
	}
	js := seedCopy(t, "by-hand", "")
	js.Labels = map[string]string{workload.QueueLabel: "lq"}
	if err := mgr.Objects.Create(ctx, js); err != nil {
		t.Fatal(err)
	}
	waitPodsRunning(t, worker, "by-hand", 8, 240*time.Second)
}

// queuedSeed is the seed JobSet named name in Kueue's LocalQueue, with a
// WorkloadPriorityClass if priority is not "".
func queuedSeed(t *testing.T, name, priority string) *api.JobSet {
	js := seedCopy(t, name, "")
	js.Labels = map[string]string{workload.QueueLabel: kueue.LocalQueueName}
	if priority != "" {
		js.Labels[workload.PriorityClassLabel] = priority
	}
	return js
}

func waitPodsRunning(t *testing.T, c *framework.Cluster, jobset string, n int, timeout time.Duration) {
	t.Helper()
	framework.Eventually(t, timeout, func(ctx context.Context) (bool, string) {
		got := runningPods(t, c, jobset)
		var js api.JobSet
		_ = c.Objects.Get(ctx, client.ObjectKey{Namespace: "default", Name: jobset}, &js)
		return got == n, fmt.Sprintf("%s: %d of %d pods Running (suspend %v, conditions %+v)", jobset, got, n, js.Spec.Suspend, js.Status.Conditions)
	})
}

// onHealthyGroup: every running pod of the JobSet is on a Ready node of group.
func onHealthyGroup(t *testing.T, c *framework.Cluster, jobset, group string) {
	t.Helper()
	for _, p := range jobsetPods(t, c, jobset) {
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		n, err := c.Client.CoreV1().Nodes().Get(context.Background(), p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n.Labels[gke.MultisliceGroupLabel] != group || !gke.NodeReady(n) {
			t.Errorf("pod %s on node %s (group %q, Ready %v), want a Ready node of %s", p.Name, n.Name, n.Labels[gke.MultisliceGroupLabel], gke.NodeReady(n), group)
		}
	}
}

// workloadOf is the Kueue Workload of the JobSet.
func workloadOf(t *testing.T, dyn dynamic.Interface, jobset string) *unstructured.Unstructured {
	t.Helper()
	var found *unstructured.Unstructured
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) (bool, string) {
		list, err := dyn.Resource(workloadsGVR).Namespace("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for i := range list.Items {
			for _, o := range list.Items[i].GetOwnerReferences() {
				if o.Kind == "JobSet" && o.Name == jobset {
					found = &list.Items[i]
					return true, ""
				}
			}
		}
		return false, "no Workload owned by JobSet " + jobset
	})
	return found
}

// admitted: the Workload's Admitted condition is True.
func admitted(w *unstructured.Unstructured) bool {
	return workloadCondition(w, "Admitted")["status"] == "True"
}

// workloadCondition is the Workload's condition of type t (nil if none).
func workloadCondition(w *unstructured.Unstructured, t string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(w.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == t {
			return m
		}
	}
	return nil
}
