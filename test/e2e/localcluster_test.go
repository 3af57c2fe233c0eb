package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/testobj"
	"github.com/multislice/multislice/test/framework"
)

// TestLocalCluster walks the local-cluster user journey: up, node pools
// through the CLI with every refusal GKE would give, Indexed Jobs that
// succeed and fail on the simulated TPUs, status, and a down that leaves
// nothing behind.
func TestLocalCluster(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	began := time.Now()
	c, upOut := framework.StartCluster(t)
	t.Logf("multislice up (default fleet) took %s", time.Since(began).Round(10*time.Millisecond))
	if !strings.Contains(upOut, "export KUBECONFIG="+filepath.Join(c.Home, "kubeconfig")) {
		t.Errorf("up does not print the export line:\n%s", upOut)
	}
	ctx := context.Background()

	t.Run("up again says the cluster runs", func(t *testing.T) {
		out := c.MustRun("up")
		if !strings.Contains(out, "already running") {
			t.Errorf("second up: %s", out)
		}
	})
	t.Run("default fleet carries GKE's metadata", func(t *testing.T) { checkDefaultFleet(t, ctx, c) })
	t.Run("node pools", func(t *testing.T) { checkNodePools(t, ctx, c) })
	t.Run("indexed job succeeds", func(t *testing.T) { runIndexedJob(t, ctx, c, "ok-job", "0", batchv1.JobComplete) })
	t.Run("indexed job fails", func(t *testing.T) { runIndexedJob(t, ctx, c, "failing-job", "3", batchv1.JobFailed) })
	t.Run("status", func(t *testing.T) {
		out := c.MustRun("status")
		for _, comp := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "multislice-manager", "cloud-repair", "sim-agents"} {
			if !strings.Contains(out, comp) {
				t.Errorf("status does not show %s:\n%s", comp, out)
			}
		}
		if strings.Contains(out, "STOPPED") || !strings.Contains(out, "multislice-group-1") {
			t.Errorf("status:\n%s", out)
		}
		t.Logf("\n%s", out)
		// The same as one document for scripts, camelCase as kubectl's.
		var doc map[string][]map[string]any
		if err := json.Unmarshal([]byte(c.MustRun("status", "-o", "json")), &doc); err != nil {
			t.Fatalf("status -o json: %v", err)
		}
		if len(doc["components"]) != 8 || doc["components"][0]["running"] != true || len(doc["pools"]) == 0 ||
			doc["pools"][0]["machineType"] == nil || len(doc["groups"]) == 0 || doc["groups"][0]["healthySlices"] == nil {
			t.Errorf("status -o json: %v", doc)
		}
		if out := c.MustRun("status", "-o", "yaml"); !strings.Contains(out, "healthySlices:") {
			t.Errorf("status -o yaml:\n%s", out)
		}
	})
	t.Run("down stops everything", func(t *testing.T) { checkDown(t, c) })
}

func checkDefaultFleet(t *testing.T, ctx context.Context, c *framework.Cluster) {
	nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "MultisliceGroup=multislice-group-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 10 {
		t.Fatalf("group multislice-group-1 has %d nodes, want 10 (4 slices + 1 spare, 2 hosts each)", len(nodes.Items))
	}
	for _, n := range nodes.Items {
		want := map[string]string{
			gke.AcceleratorLabel:               "tpu-v4-podslice",
			gke.TopologyLabel:                  "2x2x2",
			gke.AcceleratorCountLabel:          "4",
			"node.kubernetes.io/instance-type": "ct4p-hightpu-4t",
			"MultisliceGroupSize":              "4",
		}
		for k, v := range want {
			if n.Labels[k] != v {
				t.Errorf("node %s: label %s=%q, want %q", n.Name, k, n.Labels[k], v)
			}
		}
		if !strings.HasPrefix(n.Name, "gke-"+n.Labels[gke.NodePoolLabel]+"-") {
			t.Errorf("node %s is not named after its pool %q", n.Name, n.Labels[gke.NodePoolLabel])
		}
		if !hasTPUTaint(n) {
			t.Errorf("node %s: taints %v, want google.com/tpu=present:NoSchedule", n.Name, n.Spec.Taints)
		}
		if q := n.Status.Allocatable[gke.TPUResource]; q.Cmp(resource.MustParse("4")) != 0 {
			t.Errorf("node %s: allocatable google.com/tpu = %s, want 4", n.Name, q.String())
		}
		if !ready(n) {
			t.Errorf("node %s is not Ready", n.Name)
		}
	}
	out := c.MustRun("nodepool", "status", "-l", "MultisliceGroup=multislice-group-1")
	if !strings.Contains(out, "Ready nodes: 10 of 10") || !strings.Contains(out, "Group multislice-group-1: complete (4 slices + 1 spare healthy") {
		t.Errorf("nodepool status:\n%s", out)
	}
	out = c.MustRun("nodepool", "status", "-l", "MultisliceGroup=multislice-group-1", "-o", "json")
	var doc struct {
		ReadyNodes int `json:"readyNodes"`
		Groups     []struct {
			Name          string   `json:"name"`
			HealthySlices int      `json:"healthySlices"`
			Complete      bool     `json:"complete"`
			Pools         []string `json:"pools"`
		} `json:"groups"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.ReadyNodes != 10 || len(doc.Groups) != 1 ||
		!doc.Groups[0].Complete || doc.Groups[0].HealthySlices != 5 || len(doc.Groups[0].Pools) != 5 {
		t.Errorf("nodepool status -o json (%v):\n%s", err, out)
	}
}

func checkNodePools(t *testing.T, ctx context.Context, c *framework.Cluster) {
	const v4 = "--machine-type=ct4p-hightpu-4t"
	refusals := []struct {
		args []string
		want string
	}{
		{[]string{"nodepool", "create", "bad-nodes", v4, "--tpu-topology=2x2x2", "--num-nodes=3"},
			"numNodes: 3 disagrees with topology 2x2x2, which has 2 hosts of 4 chips: use 2"},
		{[]string{"nodepool", "create", "single", v4, "--tpu-topology=2x2x1", "--node-labels=MultisliceGroup=g2,MultisliceGroupSize=2"},
			"a multislice group cannot be made of single-host slices"},
		{[]string{"nodepool", "create", "odd", v4, "--tpu-topology=2x2x4", "--node-labels=MultisliceGroup=multislice-group-1,MultisliceGroupSize=4"},
			"differs from group multislice-group-1"},
		{[]string{"nodepool", "create", "resized", v4, "--tpu-topology=2x2x2", "--node-labels=MultisliceGroup=multislice-group-1,MultisliceGroupSize=8"},
			"MultisliceGroupSize=8, but group multislice-group-1 has MultisliceGroupSize=4"},
		{[]string{"nodepool", "create", "no-topo", v4}, "--tpu-topology is required"},
		{[]string{"nodepool", "create", "huge", v4, "--tpu-topology=4x4x4"},
			"no capacity for node pool huge: it needs 16 tpu-v4-podslice hosts and 4 of 14 are free"},
		{[]string{"nodepool", "update", "missing", "--node-labels=a=b"}, "node pool missing not found"},
	}
	for _, r := range refusals {
		out, err := c.Run(r.args...)
		if err == nil || !strings.Contains(out, r.want) {
			t.Errorf("multislice %s: err=%v, output:\n%s\nwant a refusal containing %q", strings.Join(r.args, " "), err, out, r.want)
		}
	}

	// A second operation while one runs is refused, naming the holder.
	holder := "create node pool other (someone else)"
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "nodepool-operation", Namespace: "multislice-system"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, AcquireTime: ptr.To(metav1.NowMicro()),
			RenewTime: ptr.To(metav1.NowMicro()), LeaseDurationSeconds: ptr.To(int32(120))},
	}
	if _, err := c.Client.CoordinationV1().Leases("multislice-system").Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out, err := c.Run("nodepool", "create", "group-b-0", v4, "--tpu-topology=2x2x2")
	if err == nil || !strings.Contains(out, "another node-pool operation is in progress: "+holder) {
		t.Errorf("concurrent create: err=%v\n%s", err, out)
	}
	if err := c.Client.CoordinationV1().Leases("multislice-system").Delete(ctx, "nodepool-operation", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// The seed's flow: create pools (one with labels, one labelled later), check the group.
	c.MustRun("nodepool", "create", "group-b-0", v4, "--tpu-topology=2x2x2", "--num-nodes=2",
		"--node-labels=MultisliceGroup=group-b,MultisliceGroupSize=2", "--region=us-central2", "--cluster=local")
	c.MustRun("nodepool", "create", "group-b-1", v4, "--tpu-topology=2x2x2")
	out = c.MustRun("nodepool", "status", "-l", "MultisliceGroup=group-b")
	if !strings.Contains(out, "Ready nodes: 2 of 2") || !strings.Contains(out, "INCOMPLETE") {
		t.Errorf("group-b with one pool:\n%s", out)
	}
	c.MustRun("nodepool", "update", "group-b-1", "--node-labels=MultisliceGroup=group-b,MultisliceGroupSize=2")
	out = c.MustRun("nodepool", "status", "-l", "MultisliceGroup=group-b")
	if !strings.Contains(out, "Ready nodes: 4 of 4") || !strings.Contains(out, "Group group-b: complete (2 of 2 slices healthy, 2 hosts each; 2 pools)") {
		t.Errorf("group-b with two pools:\n%s", out)
	}
	n, err := c.Client.CoreV1().Nodes().Get(ctx, "gke-group-b-1-1", metav1.GetOptions{})
	if err != nil || n.Labels["MultisliceGroup"] != "group-b" {
		t.Errorf("update did not label the nodes: %v %v", err, n.Labels)
	}
	// Capacity is used up (14 hosts: 10 in the group, 4 in group-b) until a pool goes.
	out, err = c.Run("nodepool", "create", "group-b-2", v4, "--tpu-topology=2x2x2")
	if err == nil || !strings.Contains(out, "0 of 14 are free") {
		t.Errorf("create beyond capacity: err=%v\n%s", err, out)
	}
	c.MustRun("nodepool", "delete", "group-b-1")
	nodes, _ := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: gke.NodePoolLabel + "=group-b-1"})
	if len(nodes.Items) != 0 {
		t.Errorf("delete left %d nodes", len(nodes.Items))
	}
	c.MustRun("nodepool", "create", "cpu-extra", "--machine-type=e2-standard-4", "--num-nodes=2")
	out = c.MustRun("nodepool", "list")
	for _, want := range []string{"group-b-0", "cpu-extra", "v4-16", "multislice-group-1-np-4"} {
		if !strings.Contains(out, want) {
			t.Errorf("nodepool list lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "group-b-1") {
		t.Errorf("nodepool list still shows the deleted pool:\n%s", out)
	}
}

// runIndexedJob runs a 2-worker TPU Indexed Job whose pods exit with code.
func runIndexedJob(t *testing.T, ctx context.Context, c *framework.Cluster, name, code string, want batchv1.JobConditionType) {
	job := testobj.NewJob("default", name).Indexed(2).BackoffLimit(0).
		PodSpec(testobj.TPUPod("python:3.12", "tpu-v4-podslice", "2x2x2", "4")).
		PodAnnotation("multislice.dev/simulate-run", "2s").PodAnnotation("multislice.dev/simulate-exit-code", code).Obj()
	if _, err := c.Client.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sawRunning := false
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
		pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + name})
		if err != nil {
			return false, err.Error()
		}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				sawRunning = true
			}
		}
		j, err := c.Client.BatchV1().Jobs("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, cond := range j.Status.Conditions {
			if cond.Type == want && cond.Status == corev1.ConditionTrue {
				return true, ""
			}
		}
		b, _ := json.Marshal(j.Status)
		return false, fmt.Sprintf("job %s status %s", name, b)
	})
	if !sawRunning {
		t.Logf("no pod was seen Running (they may have run between polls)")
	}
	pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + name})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("pods of %s: %v", name, err)
	}
	for _, p := range pods.Items {
		node, err := c.Client.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil || node.Labels[gke.TopologyLabel] != "2x2x2" {
			t.Errorf("pod %s ran on %q, not a v4 2x2x2 host", p.Name, p.Spec.NodeName)
		}
		if !hasCondition(p, "multislice.dev/Simulated") {
			t.Errorf("pod %s does not say it was simulated: %v", p.Name, p.Status.Conditions)
		}
		if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Terminated == nil {
			t.Errorf("pod %s has no terminated container: %+v", p.Name, p.Status.ContainerStatuses)
			continue
		}
		term := p.Status.ContainerStatuses[0].State.Terminated
		if strconv.Itoa(int(term.ExitCode)) != code || !strings.Contains(term.Message, "no process ran") {
			t.Errorf("pod %s: exit %d %q, want exit %s and an honest message", p.Name, term.ExitCode, term.Message, code)
		}
	}
}

func checkDown(t *testing.T, c *framework.Cluster) {
	data, err := os.ReadFile(filepath.Join(c.Home, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Processes []struct {
			Name  string
			PID   int
			Ports []int
		}
	}
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	out := c.MustRun("down")
	for _, p := range st.Processes {
		if !strings.Contains(out, fmt.Sprintf("stopped %s (pid %d)", p.Name, p.PID)) {
			t.Errorf("down does not report stopping %s:\n%s", p.Name, out)
		}
		if running(p.PID) {
			t.Errorf("%s (pid %d) still runs after down", p.Name, p.PID)
		}
	}
	if len(st.Processes) != 8 {
		t.Errorf("state lists %d processes, want 8 (etcd, apiserver, controller-manager, scheduler, kwok, manager, cloud-repair, sim-agents)", len(st.Processes))
	}
	if leftovers := processesUnder(c.Home); len(leftovers) > 0 {
		t.Errorf("processes still using %s: %v", c.Home, leftovers)
	}
	out = c.MustRun("down")
	if !strings.Contains(out, "no cluster is running") {
		t.Errorf("second down: %s", out)
	}
}

// running: the process exists and is not a zombie (an exited child that
// its new parent, the sandbox's init, has not reaped yet).
func running(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(data), ')')
	return i > 0 && len(data) > i+2 && data[i+2] != 'Z'
}

// processesUnder lists live pids whose command line mentions dir.
func processesUnder(dir string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		pid, _ := strconv.Atoi(e.Name())
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), dir) && running(pid) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return out
}

func hasTPUTaint(n corev1.Node) bool {
	for _, tn := range n.Spec.Taints {
		if tn.Key == gke.TPUTaintKey && tn.Value == gke.TPUTaintValue && tn.Effect == corev1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}

func ready(n corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func hasCondition(p corev1.Pod, typ corev1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == typ && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
