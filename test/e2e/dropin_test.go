package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/test/framework"
)

// TestDropIn runs upstream behaviours on `multislice up --feature-gates`:
// exclusive placement on pools smaller than a Job, plain `kubectl apply`
// twice, an elastic scale-up, and a RestartJob that restarts one Job.
func TestDropIn(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed")
	}
	fleet := filepath.Join(t.TempDir(), "fleet.yaml")
	pools := "apiVersion: multislice.dev/v1alpha1\nkind: Fleet\npools:\n"
	for i := range 3 {
		pools += fmt.Sprintf("- {name: cpu-%d, machineType: e2-standard-8, numNodes: 1}\n", i)
	}
	if err := os.WriteFile(fleet, []byte(pools), 0o644); err != nil {
		t.Fatal(err)
	}
	c, _ := framework.StartCluster(t, "--fleet", fleet, "--feature-gates=ElasticJobSet=true,RestartJob=true")
	ctx := context.Background()
	run := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(kubectl, args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(c.Home, "kubeconfig"))
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	pods := func(jobset string) []corev1.Pod {
		list, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: api.JobSetNameKey + "=" + jobset})
		if err != nil {
			t.Fatal(err)
		}
		var out []corev1.Pod
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				out = append(out, p)
			}
		}
		return out
	}

	t.Run("exclusive placement: 3 Jobs x 3 pods on three 1-node pools", func(t *testing.T) {
		data, err := os.ReadFile("../testdata/upstream-shaped/simple-exclusive-placement.yaml")
		if err != nil {
			t.Fatal(err)
		}
		manifest := strings.ReplaceAll(string(data), "parallelism: 2", "parallelism: 3")
		manifest = strings.ReplaceAll(manifest, "completions: 2", "completions: 3")
		run(manifest, "apply", "--server-side", "-f", "-")
		framework.Eventually(t, 90*time.Second, func(context.Context) (bool, string) {
			running := pods("one-job-per-pool")
			poolOf := map[string]string{} // Job -> pool
			for _, p := range running {
				node, err := c.Client.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				job, pool := p.Labels["job-name"], node.Labels[gke.NodePoolLabel]
				if poolOf[job] != "" && poolOf[job] != pool {
					t.Fatalf("job %s runs on two pools: %s and %s", job, poolOf[job], pool)
				}
				poolOf[job] = pool
			}
			distinct := map[string]bool{}
			for _, pool := range poolOf {
				distinct[pool] = true
			}
			return len(running) == 9 && len(distinct) == 3, fmt.Sprintf("%d of 9 pods Running, Jobs on pools %v", len(running), poolOf)
		})
		run("", "delete", "jobset", "one-job-per-pool", "--wait=false")
	})

	const plain = `apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: plain
spec:
  replicatedJobs:
  - name: w
    replicas: 2
    template:
      spec:
        parallelism: 1
        completions: 1
        template:
          spec:
            containers: [{name: w, image: busybox, command: [sleep, "3600"]}]
`
	t.Run("kubectl apply twice (client-side) changes nothing", func(t *testing.T) {
		run(plain, "apply", "-f", "-")
		var js api.JobSet
		if err := c.Objects.Get(ctx, client.ObjectKey{Namespace: "default", Name: "plain"}, &js); err != nil {
			t.Fatal(err)
		}
		out := run(plain, "apply", "-f", "-")
		var again api.JobSet
		if err := c.Objects.Get(ctx, client.ObjectKey{Namespace: "default", Name: "plain"}, &again); err != nil {
			t.Fatal(err)
		}
		if again.Generation != js.Generation {
			t.Fatalf("second apply (%s) bumped the generation %d -> %d", strings.TrimSpace(out), js.Generation, again.Generation)
		}
		t.Logf("second apply: %s", strings.TrimSpace(out))
		// A real change to an immutable field is still refused, naming it.
		cmd := exec.Command(kubectl, "apply", "-f", "-")
		cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(c.Home, "kubeconfig"))
		cmd.Stdin = strings.NewReader(strings.Replace(plain, "image: busybox", "image: alpine", 1))
		if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "spec.replicatedJobs: Forbidden: field is immutable") {
			t.Fatalf("changed image: %v\n%s", err, out)
		}
	})

	t.Run("elastic scale-up reaches the child Jobs", func(t *testing.T) {
		framework.Eventually(t, 60*time.Second, func(context.Context) (bool, string) {
			n := len(pods("plain"))
			return n == 2, fmt.Sprintf("%d of 2 pods Running", n)
		})
		run("", "patch", "jobset", "plain", "--type=json", "-p",
			`[{"op":"replace","path":"/spec/replicatedJobs/0/template/spec/parallelism","value":2},`+
				`{"op":"replace","path":"/spec/replicatedJobs/0/template/spec/completions","value":2},`+
				`{"op":"replace","path":"/spec/replicatedJobs/0/replicas","value":3}]`)
		framework.Eventually(t, 60*time.Second, func(context.Context) (bool, string) {
			n := len(pods("plain"))
			return n == 6, fmt.Sprintf("%d of 6 pods Running (3 Jobs x 2)", n)
		})
		run("", "delete", "jobset", "plain", "--wait=false")
	})

	t.Run("RestartJob restarts only the failed Job", func(t *testing.T) {
		manifest := strings.NewReplacer("name: plain", "name: one", "replicas: 2", "replicas: 3").Replace(plain) +
			"  failurePolicy:\n    maxRestarts: 3\n    rules:\n    - {name: one, action: RestartJob}\n"
		manifest = strings.Replace(manifest, "        completions: 1\n", "        completions: 1\n        backoffLimit: 0\n", 1)
		run(manifest, "apply", "--server-side", "-f", "-")
		var before []corev1.Pod
		framework.Eventually(t, 60*time.Second, func(context.Context) (bool, string) {
			before = pods("one")
			return len(before) == 3, fmt.Sprintf("%d of 3 pods Running", len(before))
		})
		victim := before[0]
		if err := c.Client.CoreV1().Pods("default").Delete(ctx, victim.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, 60*time.Second, func(context.Context) (bool, string) {
			after := pods("one")
			kept, restarted := 0, 0
			for _, p := range after {
				for _, b := range before {
					if p.UID == b.UID {
						kept++
					}
				}
				if p.Labels["job-name"] == victim.Labels["job-name"] && p.Labels[api.JobRestartsKey] == "1" {
					restarted++
				}
			}
			return len(after) == 3 && kept == 2 && restarted == 1, fmt.Sprintf("%d Running: %d kept, %d restarted", len(after), kept, restarted)
		})
		var js api.JobSet
		if err := c.Objects.Get(ctx, client.ObjectKey{Namespace: "default", Name: "one"}, &js); err != nil {
			t.Fatal(err)
		}
		if js.Status.Restarts != 0 {
			t.Errorf("restarts %d, want 0 (only one Job restarted)", js.Status.Restarts)
		}
	})
}
