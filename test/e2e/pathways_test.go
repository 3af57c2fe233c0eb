package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/localcluster/sim"
	"github.com/multislice/multislice/test/framework"
)

// pathwaysExamples are the examples TestPathways applies (its fleet).
var pathwaysExamples = []string{"examples/fleet-pathways.yaml", "examples/pathways-jobset.yaml"}

// TestPathways: xpk's Pathways JobSet, applied unchanged with kubectl (a
// warning, not a refusal, for its workers' backoffLimit), runs its head on
// a host of cpu-np and one worker Job per slice on its own pool; a worker
// container that fails restarts in place (no JobSet restart); a worker Job
// whose backoffLimit is used up restarts the JobSet once; the head's
// success completes it. Then the same through `workload create-pathways
// --dry-run -o yaml | kubectl apply -f -`, and the example file.
func TestPathways(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	kubectl := requireKubectl(t)
	root, _ := filepath.Abs("../..")
	// Repairs wait: a failed slice moves to the spare pool, not back onto
	// its own pool repaired while the old pods stop.
	c, _ := framework.StartCluster(t, "--fleet", filepath.Join(root, "examples/fleet-pathways.yaml"), "--repair-delay=10m")

	// xpk's own rendering for v4-16 x 2, Pathways' images and all.
	tmpl := template.Must(template.ParseFiles(filepath.Join(root, "test/testdata/xpk/pathways.yaml.tmpl")))
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, map[string]any{"Name": "pw", "Queue": "multislice-queue", "Slices": 2, "Hosts": 2, "Chips": 4,
		"Accelerator": "tpu-v4-podslice", "Topology": "2x2x2", "Backoff": 8, "InstanceType": "tpuv4:2x2x2"}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "pw.yaml")
	if err := os.WriteFile(file, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := kubectl(c, "apply", "-f", file)
	if err != nil {
		t.Fatalf("kubectl apply of xpk's Pathways JobSet: %v\n%s", err, out)
	}
	if !strings.Contains(out, "Warning:") || !strings.Contains(out, "a failed pod is retried inside its slice, up to 8 times") {
		t.Errorf("kubectl printed no backoffLimit advice:\n%s", out)
	}

	head, workers := pathwaysRunning(t, c, "pw", 0)
	// InOrder: the worker Jobs come once the head is ready.
	var ready metav1.Time
	for _, cond := range head.Status.Conditions {
		if cond.Type == corev1.PodReady {
			ready = cond.LastTransitionTime
		}
	}
	for _, w := range workers {
		j, err := c.Client.BatchV1().Jobs("default").Get(context.Background(), w.Labels["job-name"], metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if j.CreationTimestamp.Before(&ready) {
			t.Errorf("worker Job %s created %v, before the head was ready (%v)", j.Name, j.CreationTimestamp, ready)
		}
	}
	coordinator := head.Labels[api.CoordinatorKey]
	if want := "pw-pathways-head-0-0.pw"; coordinator != want {
		t.Errorf("coordinator label %q, want %q", coordinator, want)
	}
	for _, s := range head.Status.InitContainerStatuses {
		if s.State.Running == nil || s.Started == nil || !*s.Started {
			t.Errorf("sidecar %s not running beside the program: %+v", s.Name, s.State)
		}
	}
	for _, p := range workers {
		env := map[string]corev1.EnvVar{}
		for _, e := range p.Spec.Containers[0].Env {
			env[e.Name] = e
		}
		// xpk's own variables (from the labels) stay; ours fill in the rest, consistent with them.
		if e := env["MEGASCALE_COORDINATOR_ADDRESS"]; e.ValueFrom == nil || !strings.Contains(e.ValueFrom.FieldRef.FieldPath, api.CoordinatorKey) {
			t.Errorf("%s: MEGASCALE_COORDINATOR_ADDRESS %+v, want xpk's, from the coordinator label", p.Name, e)
		}
		job := p.Labels["job-name"]
		if e := env["TPU_WORKER_HOSTNAMES"]; e.Value != job+"-0.pw,"+job+"-1.pw" {
			t.Errorf("%s: TPU_WORKER_HOSTNAMES %q", p.Name, e.Value)
		}
		if env["TPU_TOPOLOGY"].Value != "2x2x2" || env["TPU_WORKER_ID"].ValueFrom == nil {
			t.Errorf("%s: TPU env %v", p.Name, env)
		}
	}

	// One worker container killed: restarted in place, counted by its Job.
	victim := workers[0]
	failContainer(t, c, victim.Name)
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) (bool, string) {
		p, err := c.Client.CoreV1().Pods("default").Get(ctx, victim.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		rc := p.Status.ContainerStatuses[0].RestartCount
		return rc == 1 && p.Status.Phase == corev1.PodRunning, fmt.Sprintf("restart count %d, phase %s", rc, p.Status.Phase)
	})
	time.Sleep(3 * time.Second) // the controller had its chance to restart the JobSet
	if js := getJobSet(t, c, "pw"); js.Status.Restarts != 0 {
		t.Fatalf("a container restarted in place restarted the JobSet (restarts %d)", js.Status.Restarts)
	}

	// Its backoffLimit (8 restarts in the Job) used up: the Job fails, and
	// so does the JobSet, as upstream's: xpk writes no maxRestarts.
	usedUp(t, c, victim.Name, 2)
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
		js := getJobSet(t, c, "pw")
		cond := meta.FindStatusCondition(js.Status.Conditions, string(api.JobSetFailed))
		return cond != nil && cond.Reason == api.ReachedMaxRestartsReason && strings.Contains(cond.Message, victim.Labels["job-name"]),
			fmt.Sprintf("conditions %+v", js.Status.Conditions)
	})
	if out, err := kubectl(c, "delete", "-f", file, "--wait=true", "--timeout=60s"); err != nil {
		t.Fatalf("delete: %v\n%s", err, out)
	}

	// The generator's rendering (with --max-restarts, which xpk leaves
	// out), piped to kubectl: the worker Job used up restarts the JobSet
	// once, a host lost restarts it on the spare pool, and the head's
	// success completes it.
	gen := exec.Command(filepath.Join(c.Bin, "multislice"), "workload", "create-pathways", "--workload=pw2", "--tpu-type=v4-16",
		"--num-slices=2", "--max-restarts=2", "--command=python3 train.py", "-n", "default", "--dry-run", "-o", "yaml")
	gen.Env = append(os.Environ(), "MULTISLICE_HOME="+c.Home)
	rendered, err := gen.Output()
	if err != nil {
		t.Fatalf("create-pathways --dry-run: %v", err)
	}
	apply := exec.Command("kubectl", "apply", "-f", "-")
	apply.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(c.Home, "kubeconfig"))
	apply.Stdin = bytes.NewReader(rendered)
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply -f -: %v\n%s", err, out)
	}
	_, workers = pathwaysRunning(t, c, "pw2", 0)
	usedUp(t, c, workers[0].Name, 1)
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
		js := getJobSet(t, c, "pw2")
		return js.Status.Restarts == 1, fmt.Sprintf("restarts %d after a worker Job used up its backoffLimit", js.Status.Restarts)
	})
	head, workers = pathwaysRunning(t, c, "pw2", 1)
	if js := getJobSet(t, c, "pw2"); js.Status.Restarts != 1 {
		t.Fatalf("restarts %d, want exactly 1", js.Status.Restarts)
	}

	// A worker's host fails: its slice is repaired onto the spare pool,
	// every Job restarts, the head stays a host of cpu-np.
	node, err := c.Client.CoreV1().Nodes().Get(context.Background(), workers[0].Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	failed := node.Labels[gke.NodePoolLabel]
	c.MustRun("chaos", "fail-host", "--nodepool", failed)
	head, workers = pathwaysRunning(t, c, "pw2", 2)
	for _, w := range workers {
		if n, err := c.Client.CoreV1().Nodes().Get(context.Background(), w.Spec.NodeName, metav1.GetOptions{}); err != nil || n.Labels[gke.NodePoolLabel] == failed {
			t.Fatalf("worker %s on the failed pool %s (%v)", w.Name, failed, err)
		}
	}
	finishPod(t, c, head.Name, "0")
	waitCompleted(t, c, "pw2")

	// The example, as its comment says.
	if out, err := kubectl(c, "apply", "-f", filepath.Join(root, "examples/pathways-jobset.yaml")); err != nil {
		t.Fatalf("apply the example: %v\n%s", err, out)
	}
	pathwaysRunning(t, c, "pathways", 0)

	// A second one finds no free host of cpu-np (the first head has it):
	// it waits, saying so, and creates nothing, so it holds no TPU pool.
	gen = exec.Command(filepath.Join(c.Bin, "multislice"), "workload", "create-pathways", "--workload=pw3", "--tpu-type=v4-16",
		"--num-slices=2", "--command=python3 train.py", "-n", "default")
	gen.Env = append(os.Environ(), "MULTISLICE_HOME="+c.Home, "KUBECONFIG="+filepath.Join(c.Home, "kubeconfig"))
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("create-pathways: %v\n%s", err, out)
	}
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) (bool, string) {
		cond := meta.FindStatusCondition(getJobSet(t, c, "pw3").Status.Conditions, string(api.JobSetTopologyAssigned))
		return cond != nil && cond.Status == metav1.ConditionFalse && strings.Contains(cond.Message, "replicated job pathways-head (by kubernetes.io/hostname)") &&
			strings.Contains(cond.Message, "in node pool cpu-np"), fmt.Sprintf("condition %+v", cond)
	})
	if jobs := jobsOf(t, c, "pw3"); len(jobs) != 0 {
		t.Errorf("a waiting Pathways JobSet created %d Jobs", len(jobs))
	}
}

// usedUp fails a worker pod's container again and again, from restart
// from, until its Job's backoffLimit (8) is used up and the pod goes.
func usedUp(t *testing.T, c *framework.Cluster, pod string, from int) {
	t.Helper()
	for i := from; i <= 8; i++ {
		failContainer(t, c, pod)
		framework.Eventually(t, 30*time.Second, func(ctx context.Context) (bool, string) {
			p, err := c.Client.CoreV1().Pods("default").Get(ctx, pod, metav1.GetOptions{})
			if err != nil || p.DeletionTimestamp != nil {
				return true, "" // the Job failed: its pods go
			}
			rc := p.Status.ContainerStatuses[0].RestartCount
			return int(rc) >= i, fmt.Sprintf("restart count %d, want %d", rc, i)
		})
	}
}

// pathwaysRunning waits for a Pathways JobSet's head Running on a host of
// cpu-np and its 4 workers Running, each worker Job on a pool of its own.
func pathwaysRunning(t *testing.T, c *framework.Cluster, name string, attempt int) (corev1.Pod, []corev1.Pod) {
	t.Helper()
	pods := waitDistinctPools(t, c, name, attempt, 5, 90*time.Second)
	var head corev1.Pod
	var workers []corev1.Pod
	for _, p := range pods {
		node, err := c.Client.CoreV1().Nodes().Get(context.Background(), p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pool := node.Labels[gke.NodePoolLabel]
		switch p.Labels[api.ReplicatedJobNameKey] {
		case "pathways-head":
			if pool != "cpu-np" {
				t.Fatalf("the head runs on pool %s, want cpu-np", pool)
			}
			head = p
		default:
			if node.Labels[gke.AcceleratorLabel] == "" {
				t.Fatalf("worker %s runs on %s, not a TPU host", p.Name, node.Name)
			}
			workers = append(workers, p)
		}
	}
	if head.Name == "" || len(workers) != 4 {
		t.Fatalf("head %q and %d workers", head.Name, len(workers))
	}
	return head, workers
}

// failContainer makes a simulated pod's first container exit with 137, as
// a container killed.
func failContainer(t *testing.T, c *framework.Cluster, pod string) {
	t.Helper()
	finishPod(t, c, pod, "137")
}

// finishPod makes a simulated pod's container exit now with code.
func finishPod(t *testing.T, c *framework.Cluster, pod, code string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"0s",%q:%q}}}`, sim.RunAnnotation, sim.ExitCodeAnnotation, code)
	if _, err := c.Client.CoreV1().Pods("default").Patch(context.Background(), pod, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("pod %s exits %s: %v", pod, code, err)
	}
}

func waitCompleted(t *testing.T, c *framework.Cluster, name string) {
	t.Helper()
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
		js := getJobSet(t, c, name)
		done := meta.IsStatusConditionTrue(js.Status.Conditions, string(api.JobSetCompleted))
		return done && js.Status.TerminalState == api.TerminalStateCompleted, fmt.Sprintf("conditions %+v", js.Status.Conditions)
	})
}
