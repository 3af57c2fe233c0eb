package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/testobj"
	"github.com/multislice/multislice/test/framework"
)

// trainerCheckpoints is the host directory examples/trainer-jobset.yaml
// keeps its checkpoints in.
const trainerCheckpoints = "/var/tmp/multislice-checkpoints/trainer"

// checkTrainer runs examples/trainer (its image loaded as the examples'
// comments say) through every fault, each ending with all four workers at
// the same new attempt, resumed from the newest checkpoint with the loss
// going on from there: with Recreate (examples/trainer-jobset.yaml) a
// worker's process killed, then a host of the other slice lost; with
// InPlaceRestart (examples/trainer-in-place-jobset.yaml) a worker killed
// (the same pods on the same nodes, every container restarted once, the
// workers released together), then the coordinator's host lost. Last, the
// trainer outside a JobSet refuses to start.
func checkTrainer(t *testing.T, c *framework.Cluster, root string) {
	bin := filepath.Join(t.TempDir(), "trainer")
	build := exec.Command("go", "build", "-o", bin, "./examples/trainer")
	build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/trainer: %v\n%s", err, out)
	}
	c.MustRun("image", "load", bin, "ghcr.io/multislice/trainer:dev")
	defer os.RemoveAll(trainerCheckpoints)

	tr := startTrainer(t, c, root, "examples/trainer-jobset.yaml")
	began := time.Now()
	if out := c.MustRun("chaos", "kill-worker", "trainer", "--slice", "1", "--worker", "1"); !strings.Contains(out, "killed [slice-1/worker-1 attempt-0]") {
		t.Errorf("chaos kill-worker says:\n%s", out)
	}
	waitDistinctPools(t, c, "trainer", 1, 4, 90*time.Second)
	tr.waitResumed(t, c, "attempt-1]", began, "worker killed, recreate")

	// A host of slice 1 is lost (its kubelet stops): slice health fails
	// the slice, its Job is recreated on the spare real slice, slice 0 is
	// recreated with it (Recreate), and all resume.
	lost := tr.loseHost(t, c, "trainer-slice-1-")
	began = time.Now()
	for _, p := range waitDistinctPools(t, c, "trainer", 2, 4, 3*time.Minute) {
		if strings.HasPrefix(p.Spec.NodeName, "gke-"+lost.pool+"-") {
			t.Errorf("pod %s of attempt 2 is on %s, in the lost pool %s", p.Name, p.Spec.NodeName, lost.pool)
		}
	}
	tr.waitResumed(t, c, "attempt-2]", began, "host of slice 1 lost, recreate")
	lost.restore(t, c)
	deleteTrainer(t, c, root, "examples/trainer-jobset.yaml")

	tr = startTrainer(t, c, root, "examples/trainer-in-place-jobset.yaml")
	before := trainerPods(t, c)
	began = time.Now()
	c.MustRun("chaos", "kill-worker", "trainer", "--slice", "1", "--worker", "1")
	waitInPlaceAttempt(t, c, 1)
	tr.waitResumed(t, c, "/1]", began, "worker killed, in place")
	after := trainerPods(t, c)
	for uid, p := range before {
		q, ok := after[uid]
		switch {
		case !ok:
			t.Errorf("pod %s (%s) is gone: an in-place restart keeps every pod", p.Name, uid)
		case q.Spec.NodeName != p.Spec.NodeName:
			t.Errorf("pod %s moved from %s to %s", p.Name, p.Spec.NodeName, q.Spec.NodeName)
		default:
			for i, st := range append(q.Status.InitContainerStatuses, q.Status.ContainerStatuses...) {
				if was := append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...)[i].RestartCount; st.RestartCount != was+1 {
					t.Errorf("pod %s container %s restarted %d times, was %d: want once more", p.Name, st.Name, st.RestartCount, was)
				}
			}
		}
	}
	checkReleasedTogether(t, c, 1)

	// The coordinator's host is lost: slice 0 is recreated on the spare
	// real slice, slice 1 restarts in place, and all resume.
	lost = tr.loseHost(t, c, "trainer-slice-0-0-")
	began = time.Now()
	waitInPlaceAttempt(t, c, 2)
	tr.waitResumed(t, c, "/2]", began, "coordinator's host lost, in place")
	for uid, p := range trainerPods(t, c) {
		_, old := after[uid]
		if slice1 := strings.HasPrefix(p.Name, "trainer-slice-1-"); slice1 != old {
			t.Errorf("pod %s on %s: want slice 1's pods kept (in place), slice 0's new", p.Name, p.Spec.NodeName)
		}
		if strings.HasPrefix(p.Spec.NodeName, "gke-"+lost.pool+"-") {
			t.Errorf("pod %s is on %s, in the lost pool %s", p.Name, p.Spec.NodeName, lost.pool)
		}
	}
	lost.restore(t, c)
	checkTrainerRefusesNoEnvironment(t, c)
	deleteTrainer(t, c, root, "examples/trainer-in-place-jobset.yaml")
}

// trainerRun is one trainer JobSet: the loss of its first step.
type trainerRun struct{ first float64 }

// startTrainer applies an example of the trainer with no checkpoint, and
// returns once its four workers run and a checkpoint exists.
func startTrainer(t *testing.T, c *framework.Cluster, root, file string) trainerRun {
	if err := os.RemoveAll(trainerCheckpoints); err != nil {
		t.Fatal(err)
	}
	commands, _ := exampleCommands(t, filepath.Join(root, file))
	runKubectlLines(t, c, root, commands)
	waitDistinctPools(t, c, "trainer", 0, 4, 90*time.Second)
	framework.Eventually(t, 60*time.Second, func(context.Context) (bool, string) {
		return newestCheckpoint() > 0, "no checkpoint in " + trainerCheckpoints
	})
	out := c.MustRun("logs", "trainer", "--slice", "0", "--worker", "0")
	first := lossAt(out, 1)
	if !strings.Contains(out, "no checkpoint: starting at step 0") || first <= 0 {
		t.Fatalf("%s did not start afresh:\n%s", file, out)
	}
	return trainerRun{first: first}
}

// waitResumed waits until the four workers whose log prefix ends with
// attempt resumed from one checkpoint step, at least the newest when the
// fault began, and trained on from its loss.
func (tr trainerRun) waitResumed(t *testing.T, c *framework.Cluster, attempt string, began time.Time, fault string) {
	t.Helper()
	saved := newestCheckpoint()
	var resumed []int
	var out string
	framework.Eventually(t, 90*time.Second, func(context.Context) (bool, string) {
		out, _ = c.Run("logs", "trainer")
		resumed = resumed[:0]
		for _, line := range strings.Split(out, "\n") {
			if _, rest, ok := strings.Cut(line, attempt+" resumed from checkpoint step "); ok {
				n, _ := strconv.Atoi(strings.Fields(rest)[0])
				resumed = append(resumed, n)
			}
		}
		return len(resumed) == 4 && lossAt(out, resumed[0]+1) > 0, "multislice logs trainer:\n" + out
	})
	if slices.Min(resumed) != slices.Max(resumed) || resumed[0] < saved || resumed[0] == 0 {
		t.Errorf("%s: workers resumed from steps %v; want all from the same, at least %d (the newest checkpoint at the fault)", fault, resumed, saved)
	}
	if next := lossAt(out, resumed[0]+1); next >= tr.first/2 {
		t.Errorf("%s: loss at step %d after resuming: %f, the first step's was %f: it started over", fault, resumed[0]+1, next, tr.first)
	}
	t.Logf("%s (newest checkpoint: step %d) to 4 workers resumed from step %d and training: %s", fault, saved, resumed[0], time.Since(began).Round(100*time.Millisecond))
}

// lostHost is a real host whose kubelet `chaos fail-host` stopped.
type lostHost struct{ pool, node string }

// loseHost stops the kubelet of the host that runs the trainer's pod
// named with prefix.
func (trainerRun) loseHost(t *testing.T, c *framework.Cluster, prefix string) lostHost {
	t.Helper()
	for _, p := range trainerPods(t, c) {
		if !strings.HasPrefix(p.Name, prefix) {
			continue
		}
		node, err := c.Client.CoreV1().Nodes().Get(context.Background(), p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pool := node.Labels[gke.NodePoolLabel]
		host := strings.TrimPrefix(node.Name, "gke-"+pool+"-")
		c.MustRun("chaos", "fail-host", "--nodepool", pool, "--host", host)
		return lostHost{pool: pool, node: node.Name}
	}
	t.Fatalf("no trainer pod %s*", prefix)
	return lostHost{}
}

// restore starts the lost host's kubelet again (`up`) and waits for its
// node to be Ready, so that its pool can be the spare again.
func (h lostHost) restore(t *testing.T, c *framework.Cluster) {
	t.Helper()
	if out := c.MustRun("up"); !strings.Contains(out, "restarted kubelet-"+h.node) {
		t.Errorf("up after the lost host does not restart its kubelet:\n%s", out)
	}
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, h.node, metav1.GetOptions{})
		return err == nil && ready(*n), fmt.Sprintf("node %s Ready again: %v", h.node, err)
	})
}

// trainerPods are the trainer's pods not being deleted, by UID.
func trainerPods(t *testing.T, c *framework.Cluster) map[string]corev1.Pod {
	t.Helper()
	pods, err := c.Client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: api.JobSetNameKey + "=trainer"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]corev1.Pod{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out[string(p.UID)] = p
		}
	}
	return out
}

// waitInPlaceAttempt waits until the trainer's current in-place attempt is
// attempt and its four pods run in it.
func waitInPlaceAttempt(t *testing.T, c *framework.Cluster, attempt int32) {
	t.Helper()
	framework.Eventually(t, 3*time.Minute, func(context.Context) (bool, string) {
		js := getJobSet(t, c, "trainer")
		if got := ptr.Deref(js.Status.CurrentInPlaceRestartAttempt, -1); got != attempt {
			return false, fmt.Sprintf("current in-place attempt %d, want %d (conditions %+v)", got, attempt, js.Status.Conditions)
		}
		n := 0
		for _, p := range trainerPods(t, c) {
			if p.Status.Phase == corev1.PodRunning && p.Annotations[api.InPlaceRestartAttemptKey] == strconv.Itoa(int(attempt)) {
				n++
			}
		}
		return n == 4, fmt.Sprintf("%d of 4 pods Running at in-place attempt %d", n, attempt)
	})
}

// checkReleasedTogether: no trainer of the attempt started before every
// agent had joined it (the agents' and the trainers' log timestamps).
func checkReleasedTogether(t *testing.T, c *framework.Cluster, attempt int) {
	t.Helper()
	var joined, started []time.Time
	for _, p := range trainerPods(t, c) {
		agentLog, err := requireKubectl(t)(c, "logs", p.Name, "-c", "in-place-restart-agent", "--timestamps")
		if err != nil {
			t.Fatalf("logs of %s's agent: %v", p.Name, err)
		}
		for _, line := range strings.Split(agentLog, "\n") {
			if strings.HasSuffix(line, fmt.Sprintf("is at attempt %d", attempt)) {
				joined = append(joined, logTime(t, line))
			}
		}
		trainerLog, err := requireKubectl(t)(c, "logs", p.Name, "-c", "trainer", "--timestamps")
		if err != nil {
			t.Fatalf("logs of %s's trainer: %v", p.Name, err)
		}
		started = append(started, logTime(t, trainerLog))
	}
	if len(joined) != 4 || len(started) != 4 {
		t.Fatalf("%d agents joined attempt %d and %d trainers started, want 4 each", len(joined), attempt, len(started))
	}
	last, first := slices.MaxFunc(joined, time.Time.Compare), slices.MinFunc(started, time.Time.Compare)
	if first.Before(last) {
		t.Errorf("a trainer started at %s, before the last agent joined attempt %d at %s: the barrier did not hold", first.Format(time.StampMicro), attempt, last.Format(time.StampMicro))
	}
	t.Logf("attempt %d: the last agent joined at %s; the trainers started %s to %s after", attempt, last.Format(time.StampMilli),
		slices.MinFunc(started, time.Time.Compare).Sub(last).Round(time.Millisecond), slices.MaxFunc(started, time.Time.Compare).Sub(last).Round(time.Millisecond))
}

// logTime is the timestamp kubectl logs --timestamps puts before a line.
func logTime(t *testing.T, line string) time.Time {
	ts, _, _ := strings.Cut(line, " ")
	at, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		t.Fatalf("no timestamp in %q: %v", line, err)
	}
	return at
}

// newestCheckpoint is the step of the newest checkpoint file, 0 if none.
func newestCheckpoint() int {
	names, _ := filepath.Glob(filepath.Join(trainerCheckpoints, "ckpt-*.json"))
	if len(names) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(names[len(names)-1]), "ckpt-"), ".json"))
	return n
}

// deleteTrainer deletes an example of the trainer in the foreground:
// kubectl returns once every pod is gone, so no trainer of it still writes
// checkpoints where the next one starts afresh. Deleted in the background,
// a coordinator still running wrote one while startTrainer emptied the
// directory ("directory not empty").
func deleteTrainer(t *testing.T, c *framework.Cluster, root, file string) {
	t.Helper()
	if out, err := requireKubectl(t)(c, "delete", "-f", filepath.Join(root, file), "--cascade=foreground", "--wait=true"); err != nil {
		t.Errorf("delete the trainer: %v\n%s", err, out)
	}
}

// checkTrainerRefusesNoEnvironment: the trainer in a pod outside a JobSet
// (no TPU environment) exits 2 and names the missing variable.
func checkTrainerRefusesNoEnvironment(t *testing.T, c *framework.Cluster) {
	ctx := context.Background()
	pod := testobj.NewPod("default", "lonely-trainer").Edit(func(p *corev1.Pod) {
		p.Spec = corev1.PodSpec{NodeName: "gke-system-0", RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "trainer", Image: "ghcr.io/multislice/trainer:dev", Args: []string{"--checkpoint-dir=/tmp"}}}}
	}).Obj()
	if _, err := c.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer c.Client.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{})
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
		p, err := c.Client.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil || len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Terminated == nil {
			return false, fmt.Sprintf("pod %s not terminated yet (%v)", pod.Name, err)
		}
		return true, ""
	})
	p, _ := c.Client.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
	code := p.Status.ContainerStatuses[0].State.Terminated.ExitCode
	out, _ := requireKubectl(t)(c, "logs", pod.Name)
	if code != 2 || !strings.Contains(out, "TPU_WORKER_ID is not set") {
		t.Errorf("the trainer outside a JobSet: exit %d, log %q; want exit 2 naming TPU_WORKER_ID", code, out)
	}
}

// lossAt is the loss a trainer's log reports at step, 0 if none.
func lossAt(log string, step int) float64 {
	for _, line := range strings.Split(log, "\n") {
		if _, rest, ok := strings.Cut(line, fmt.Sprintf("step=%d loss=", step)); ok {
			v, _ := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v
		}
	}
	return 0
}
