package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/test/framework"
)

// TestInPlaceRestart runs examples/in-place-restart.yaml (the seed, 4 x 2,
// with restartStrategy InPlaceRestart and the agent as a sidecar) on the
// local cluster: a failed pod restarts all 8 in place (same pods, same
// nodes) at the next attempt; a lost host recreates its slice alone on the
// spare pool while the others restart in place; maxRestarts fails it; and a
// JobSet without the agent says so and falls back to recreating.
func TestInPlaceRestart(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	c, _ := framework.StartClusterWithEnv(t, []string{"MULTISLICE_MANAGER_ARGS=--in-place-restart-timeout=5s"}, "--feature-gates=InPlaceRestart=true")
	ctx := context.Background()
	t.Cleanup(func() {
		if t.Failed() {
			dumpJobSetState(t, c)
		}
	})
	js := inPlaceExample(t) // its ServiceAccount: `up` grants config/agent in default
	if err := c.Objects.Create(ctx, js); err != nil {
		t.Fatal(err)
	}
	name := js.Name
	started := inPlaceAttempt(t, c, name, 0)

	// One worker exits 137: its containers restart in place, the other
	// pods follow, all are released together at attempt 1.
	began := time.Now()
	c.MustRun("chaos", "fail-pod", "--nodepool", poolOf(t, c, name+"-slice-2"))
	restarted := inPlaceAttempt(t, c, name, 1)
	t.Logf("one pod failed -> all 8 pods Running at attempt 1 in %.2fs", time.Since(began).Seconds())
	if !maps.Equal(started, restarted) {
		t.Errorf("pods or nodes changed in an in-place restart:\nbefore %v\nafter  %v", started, restarted)
	}
	if got := getJobSet(t, c, name); got.Status.Restarts != 0 {
		t.Errorf("status.restarts %d, want 0: nothing was recreated", got.Status.Restarts)
	}
	if out := c.MustRun("status", name); !strings.Contains(out, "in-place attempt 1") || !strings.Contains(out, "0/1") {
		t.Errorf("status %s does not show the in-place attempt:\n%s", name, out)
	}
	// The same pods, new container instances: the logs say so, and -p
	// reads the instance before the restart.
	out := c.MustRun("logs", name, "--slice", "2", "--worker", "0")
	checkWorkerLines(t, out, "[slice-2/worker-0 attempt-0/1] ", "(restart 1)", "in-place restart attempt 1")
	out = c.MustRun("logs", name, "--slice", "2", "--worker", "0", "-p")
	checkWorkerLines(t, out, "[slice-2/worker-0 attempt-0/1] ", "(restart 0)", "exited with code")

	// A host of slice 1 is lost: that slice alone is recreated, on another
	// pool; the other six pods restart in place.
	lost := poolOf(t, c, name+"-slice-1")
	began = time.Now()
	c.MustRun("chaos", "fail-host", "--nodepool", lost)
	repaired := inPlaceAttempt(t, c, name, 2)
	t.Logf("host lost -> slice recreated elsewhere, others in place, all Running at attempt 2 in %.2fs (10 s of it the NotReady grace)", time.Since(began).Seconds())
	for pod, node := range repaired {
		_, old := restarted[pod]
		switch {
		case strings.HasPrefix(pod, name+"-slice-1-"):
			if old || strings.Contains(node, lost+"-") {
				t.Errorf("slice 1 pod %s on %s: want a new pod off the lost pool %s", pod, node, lost)
			}
		case !old || restarted[pod] != node:
			t.Errorf("pod %s on %s was not restarted in place (before: %v)", pod, node, restarted)
		}
	}
	if got := poolOf(t, c, name+"-slice-1"); got == lost {
		t.Errorf("slice 1 recreated on its lost pool %s", lost)
	}

	// maxRestarts is 4: attempts 3 and 4 run, a fifth fails the JobSet.
	for attempt := 3; attempt <= 4; attempt++ {
		c.MustRun("chaos", "fail-pod", "--nodepool", poolOf(t, c, name+"-slice-0"))
		inPlaceAttempt(t, c, name, int32(attempt))
	}
	c.MustRun("chaos", "fail-pod", "--nodepool", poolOf(t, c, name+"-slice-0"))
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) (bool, string) {
		got := getJobSet(t, c, name)
		cond := meta.FindStatusCondition(got.Status.Conditions, string(api.JobSetFailed))
		return cond != nil && cond.Reason == api.ReachedMaxRestartsReason, fmt.Sprintf("conditions %+v", got.Status.Conditions)
	})

	// Without the agent: the JobSet says so, and a failed pod recreates
	// every Job instead of leaving the others waiting for ever.
	bare := inPlaceExample(t)
	bare.Name = "no-agent"
	bare.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.InitContainers = nil
	if err := c.Objects.Create(ctx, bare); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
		got := getJobSet(t, c, "no-agent")
		cond := meta.FindStatusCondition(got.Status.Conditions, string(api.JobSetInPlaceRestarting))
		return cond != nil && cond.Reason == api.AgentMissingReason, fmt.Sprintf("conditions %+v", got.Status.Conditions)
	})
	c.MustRun("chaos", "fail-pod", "--nodepool", poolOf(t, c, "no-agent-slice-3"))
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
		got := getJobSet(t, c, "no-agent")
		running := 0
		for _, p := range jobsetPods(t, c, "no-agent") {
			if p.Status.Phase == corev1.PodRunning && p.Labels[api.RestartsKey] == "1" {
				running++
			}
		}
		return got.Status.Restarts == 1 && running == 8, fmt.Sprintf("restarts %d, %d of 8 pods Running at attempt 1", got.Status.Restarts, running)
	})
}

// inPlaceExample is examples/in-place-restart.yaml, in namespace default.
func inPlaceExample(t *testing.T) *api.JobSet {
	data, err := os.ReadFile("../../examples/in-place-restart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var js api.JobSet
	if err := yaml.UnmarshalStrict(data, &js); err != nil {
		t.Fatal(err)
	}
	js.Namespace = "default"
	return &js
}

// inPlaceAttempt waits until the JobSet's current attempt is attempt and
// all its 8 pods are in it and Ready (workers started), and returns pod
// name -> node.
func inPlaceAttempt(t *testing.T, c *framework.Cluster, name string, attempt int32) map[string]string {
	t.Helper()
	out := map[string]string{}
	framework.Eventually(t, 90*time.Second, func(ctx context.Context) (bool, string) {
		js := getJobSet(t, c, name)
		if got := ptr.Deref(js.Status.CurrentInPlaceRestartAttempt, -1); got != attempt {
			return false, fmt.Sprintf("current attempt %d, want %d (conditions %+v)", got, attempt, js.Status.Conditions)
		}
		clear(out)
		for _, p := range jobsetPods(t, c, name) {
			if p.DeletionTimestamp != nil || p.Annotations[api.InPlaceRestartAttemptKey] != strconv.Itoa(int(attempt)) || !hasCondition(p, corev1.PodReady) {
				continue
			}
			out[p.Name] = p.Spec.NodeName
		}
		return len(out) == 8, fmt.Sprintf("%d of 8 pods Ready at attempt %d", len(out), attempt)
	})
	return out
}

func getJobSet(t *testing.T, c *framework.Cluster, name string) *api.JobSet {
	var js api.JobSet
	if err := c.Objects.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, &js); err != nil {
		t.Fatal(err)
	}
	return &js
}

// applyFile creates every object of a multi-document YAML file in default.
func applyFile(t *testing.T, c *framework.Cluster, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err == io.EOF {
			return
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		u.SetNamespace("default")
		if err := c.Objects.Create(context.Background(), &u); err != nil {
			t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
}

// dumpJobSetState logs the Jobs, the pods and the manager's and the
// simulated agents' last lines, to read why a test waited in vain.
func dumpJobSetState(t *testing.T, c *framework.Cluster) {
	ctx := context.Background()
	jobs, _ := c.Client.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{})
	for _, j := range jobs.Items {
		t.Logf("job %s deleting=%v domain=%s conditions=%v", j.Name, j.DeletionTimestamp != nil, j.Annotations[api.AssignedDomainAnnotation], j.Status.Conditions)
	}
	pods, _ := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	for _, p := range pods.Items {
		t.Logf("pod %s %s node=%s deleting=%v attempt=%s", p.Name, p.Status.Phase, p.Spec.NodeName, p.DeletionTimestamp != nil, p.Annotations[api.InPlaceRestartAttemptKey])
	}
	for _, log := range []string{"multislice-manager", "sim-agents"} {
		data, _ := os.ReadFile(filepath.Join(c.Home, "logs", log+".log"))
		lines := strings.Split(string(data), "\n")
		t.Logf("%s (last lines):\n%s", log, strings.Join(lines[max(0, len(lines)-40):], "\n"))
	}
}
