package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/test/framework"
)

// TestWorkloadShapes: `workload create --dry-run -o yaml` for v4, v5e, v5p
// and v6e shapes applies cleanly and runs on a matching simulated fleet;
// `status NAME` shows slices x workers; `workload list|delete` work.
func TestWorkloadShapes(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	fleetFile := framework.FleetFile(t, "{name: v4, accelerator: tpu-v4-podslice, topology: 2x2x2, slices: 2}", "{name: v5e, accelerator: tpu-v5-lite-podslice, topology: 4x4, slices: 2}", "{name: v5p, accelerator: tpu-v5p-slice, topology: 2x2x4, slices: 2}", "{name: v6e, accelerator: tpu-v6e-slice, topology: 4x4, slices: 2}")
	c, _ := framework.StartCluster(t, "--fleet", fleetFile)
	cl := c.Objects
	ctx := context.Background()
	shapes := []struct {
		name, tpuType string
		pods          int
	}{
		{"w-v4", "v4-16", 4}, {"w-v5e", "v5litepod-16", 8}, {"w-v5p", "v5p-32", 8}, {"w-v6e", "v6e-16", 8},
	}
	for _, s := range shapes {
		out := c.MustRun("workload", "create", s.name, "--tpu-type="+s.tpuType, "--num-slices=2",
			"--command=python train.py", "--priority=high", "--env=STEPS=10", "--dry-run", "-o", "yaml")
		var js api.JobSet
		if err := yaml.UnmarshalStrict([]byte(out), &js); err != nil {
			t.Fatalf("%s: dry-run output is not a JobSet: %v\n%s", s.tpuType, err, out)
		}
		js.Namespace = "default"
		if err := cl.Create(ctx, &js); err != nil {
			t.Fatalf("%s: generated JobSet refused: %v", s.tpuType, err)
		}
	}
	for _, s := range shapes {
		framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
			pods, _ := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: api.JobSetNameKey + "=" + s.name})
			n := 0
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodRunning {
					n++
				}
			}
			return n == s.pods, fmt.Sprintf("%s: %d of %d pods Running", s.tpuType, n, s.pods)
		})
	}

	// The placement rides on the status write made once every Job is
	// ready (or 30 s after the Jobs), which may follow the pods' Running.
	framework.Eventually(t, 30*time.Second, func(context.Context) (bool, string) {
		out, err := c.Run("status", "w-v5e")
		for _, want := range []string{"slice-0", "slice-1", "v5e-np-", "Running", "TopologyAssigned"} {
			if err != nil || !strings.Contains(out, want) {
				return false, fmt.Sprintf("status w-v5e lacks %q (%v):\n%s", want, err, out)
			}
		}
		return true, ""
	})
	var doc struct {
		Slices []struct {
			Job, Domain string
			Workers     []struct {
				Index       int
				Node, Phase string
			}
		}
	}
	js := c.MustRun("status", "w-v5e", "-o", "json")
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatalf("status -o json: %v", err)
	}
	if !strings.Contains(js, `"slices": [`) || !strings.Contains(js, `"replicatedJob": `) {
		t.Errorf("status -o json is not camelCase:\n%s", js)
	}
	if len(doc.Slices) != 2 || len(doc.Slices[0].Workers) != 4 || doc.Slices[0].Domain == doc.Slices[1].Domain {
		t.Errorf("status -o json: %+v", doc)
	}
	out := c.MustRun("workload", "list")
	if !strings.Contains(out, "w-v6e") || !strings.Contains(out, "Running") {
		t.Errorf("workload list:\n%s", out)
	}
	c.MustRun("workload", "delete", "w-v6e")
	out, err := c.Run("workload", "create", "bad", "--tpu-type=v4-8", "--num-slices=2", "--command=x")
	if err == nil || !strings.Contains(out, "--num-slices: v4-8 is a single-host slice and cannot form a multislice: use a multi-host type such as v4-16") {
		t.Errorf("single-host multislice: err=%v\n%s", err, out)
	}
}

// TestWorkloadFailureSemantics: a `workload create` workload fails at once
// on a user error (a worker exits 1) without burning a restart, and
// restarts on an infrastructure failure (`chaos fail-pod`, exit 137), as
// xpk's workloads do.
func TestWorkloadFailureSemantics(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	c, _ := framework.StartCluster(t)
	ctx := context.Background()
	c.MustRun("workload", "create", "--workload=sem", "--tpu-type=v4-16", "--num-slices=2", "--command=python train.py", "--max-restarts=5")
	restarts := func(want int32, terminal string) {
		framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
			var js api.JobSet
			if err := c.Objects.Get(ctx, types.NamespacedName{Namespace: "default", Name: "sem"}, &js); err != nil {
				return false, err.Error()
			}
			return js.Status.Restarts == want && js.Status.TerminalState == terminal,
				fmt.Sprintf("restarts %d, terminal state %q", js.Status.Restarts, js.Status.TerminalState)
		})
	}
	// running waits for the 4 pods of an attempt and returns one.
	running := func(attempt int) corev1.Pod {
		var one corev1.Pod
		framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
			pods, _ := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{
				LabelSelector: fmt.Sprintf("%s=sem,%s=%d", api.JobSetNameKey, api.RestartsKey, attempt)})
			n := 0
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
					n++
					one = p
				}
			}
			return n == 4, fmt.Sprintf("%d of 4 pods Running at attempt %d", n, attempt)
		})
		return one
	}
	node, err := c.Client.CoreV1().Nodes().Get(ctx, running(0).Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.MustRun("chaos", "fail-pod", "--nodepool", node.Labels[gke.NodePoolLabel])
	restarts(1, "")
	victim := running(1)
	patch := []byte(`{"metadata":{"annotations":{"multislice.dev/simulate-run":"0s","multislice.dev/simulate-exit-code":"1"}}}`)
	if _, err := c.Client.CoreV1().Pods("default").Patch(ctx, victim.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	restarts(1, string(api.JobSetFailed))
}
