package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/testobj"
	"github.com/multislice/multislice/test/framework"
)

// TestManagerKilledMidRestart kills the manager with SIGKILL at each step
// of a restart of the seed JobSet (old Jobs being deleted, the restart
// counted in status, the first Job of the new attempt created), restarts it
// with `multislice up`, and checks every time: 8 pods Running at the next
// attempt, one pool per Job, and exactly one restart counted. Placement is
// rebuilt from the cluster (the Jobs' pins), not from the dead process.
func TestManagerKilledMidRestart(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	c, _ := framework.StartCluster(t)
	ctx := context.Background()
	js := seedCopy(t, "crash", "")
	js.Spec.FailurePolicy.MaxRestarts = 100
	if err := c.Objects.Create(ctx, js); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name    string
		reached func(attempt int) bool
	}{
		{"old Jobs being deleted", func(attempt int) bool {
			for _, j := range jobsOf(t, c, "crash") {
				if j.Labels[api.RestartsKey] == fmt.Sprint(attempt-1) && j.DeletionTimestamp != nil {
					return true
				}
			}
			return false
		}},
		{"restart written to status", func(attempt int) bool {
			var got api.JobSet
			return c.Objects.Get(ctx, client.ObjectKeyFromObject(js), &got) == nil && got.Status.Restarts == int32(attempt)
		}},
		{"first Job of the new attempt created", func(attempt int) bool {
			for _, j := range jobsOf(t, c, "crash") {
				if j.Labels[api.RestartsKey] == fmt.Sprint(attempt) {
					return true
				}
			}
			return false
		}},
	}
	const rounds = 21
	began := time.Now()
	for attempt := 1; attempt <= rounds; attempt++ {
		step := steps[attempt%len(steps)]
		pods := runningOnDistinctPools(t, c, "crash", attempt-1)
		if err := c.Client.CoreV1().Pods("default").Delete(ctx, pods[0].Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// Kill at the step, or as soon as after it as this poll sees (a
		// fast machine may pass a step between two looks).
		deadline := time.Now().Add(30 * time.Second)
		for !step.reached(attempt) && !steps[len(steps)-1].reached(attempt) {
			if time.Now().After(deadline) {
				t.Fatalf("attempt %d: never reached %q", attempt, step.name)
			}
			time.Sleep(10 * time.Millisecond)
		}
		killManager(t, c)
		c.MustRun("up") // restarts the dead manager with its recorded arguments
		runningOnDistinctPools(t, c, "crash", attempt)
		var got api.JobSet
		if err := c.Objects.Get(ctx, client.ObjectKeyFromObject(js), &got); err != nil {
			t.Fatal(err)
		}
		if got.Status.Restarts != int32(attempt) {
			t.Fatalf("attempt %d (killed at %q): restarts = %d: a restart was lost or counted twice", attempt, step.name, got.Status.Restarts)
		}
	}
	t.Logf("%d kills mid-restart, each followed by 8 pods Running on 4 distinct pools at the next attempt (%s in all)", rounds, time.Since(began).Round(time.Second))

	// With the manager away: a new JobSet is refused naming Multislice's
	// webhook, and a foreground deletion does not wait for the manager.
	killManager(t, c)
	err := c.Objects.Create(ctx, seedCopy(t, "while-down", ""))
	if err == nil || !strings.Contains(err.Error(), "jobset.multislice.dev") {
		t.Errorf("create with the manager down: %v; want a refusal naming jobset.multislice.dev", err)
	}
	if err := c.Objects.Delete(ctx, js, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
		err := c.Objects.Get(ctx, client.ObjectKeyFromObject(js), &api.JobSet{})
		return apierrors.IsNotFound(err), fmt.Sprintf("JobSet still there (%v)", err)
	})
}

func jobsOf(t *testing.T, c *framework.Cluster, jobset string) []batchv1.Job {
	list, err := c.Client.BatchV1().Jobs("default").List(context.Background(), metav1.ListOptions{LabelSelector: api.JobSetNameKey + "=" + jobset})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// runningOnDistinctPools waits until the JobSet's 8 pods of attempt are
// Running, and fails if two Jobs share a pool or a Job spans two.
func runningOnDistinctPools(t *testing.T, c *framework.Cluster, jobset string, attempt int) []corev1.Pod {
	t.Helper()
	return waitDistinctPools(t, c, jobset, attempt, 8, 90*time.Second)
}

// waitDistinctPools waits up to timeout for want pods of the JobSet's
// attempt Running, each child Job on a node pool of its own.
func waitDistinctPools(t *testing.T, c *framework.Cluster, jobset string, attempt, want int, timeout time.Duration) []corev1.Pod {
	t.Helper()
	var running []corev1.Pod
	framework.Eventually(t, timeout, func(ctx context.Context) (bool, string) {
		pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: api.JobSetNameKey + "=" + jobset})
		if err != nil {
			return false, err.Error()
		}
		running = running[:0]
		var others []string // what a failure needs to be read: the pods in the way
		for _, p := range pods.Items {
			switch {
			case p.Labels[api.RestartsKey] == strconv.Itoa(attempt) && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil:
				running = append(running, p)
			case p.DeletionTimestamp != nil:
				others = append(others, fmt.Sprintf("%s (attempt %s) %s, Terminating on %q", p.Name, p.Labels[api.RestartsKey], p.Status.Phase, p.Spec.NodeName))
			default:
				others = append(others, fmt.Sprintf("%s (attempt %s) %s on %q", p.Name, p.Labels[api.RestartsKey], p.Status.Phase, p.Spec.NodeName))
			}
		}
		if len(others) > 10 {
			others = append(others[:10], fmt.Sprintf("and %d more", len(others)-10))
		}
		return len(running) == want, fmt.Sprintf("%d of %d pods Running at attempt %d; others: %v", len(running), want, attempt, others)
	})
	poolOfJob, jobOfPool := map[string]string{}, map[string]string{}
	for _, p := range running {
		node, err := c.Client.CoreV1().Nodes().Get(context.Background(), p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		job, pool := p.Labels["job-name"], node.Labels[gke.NodePoolLabel]
		if other := jobOfPool[pool]; other != "" && other != job {
			t.Fatalf("attempt %d: Jobs %s and %s share pool %s", attempt, other, job, pool)
		}
		if other := poolOfJob[job]; other != "" && other != pool {
			t.Fatalf("attempt %d: Job %s spans pools %s and %s", attempt, job, other, pool)
		}
		poolOfJob[job], jobOfPool[pool] = pool, job
	}
	return running
}

// killManager sends SIGKILL to the local cluster's manager and waits until it is gone.
func killManager(t *testing.T, c *framework.Cluster) {
	t.Helper()
	pid := c.Process("multislice-manager").PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill manager %d: %v", pid, err)
	}
	// Gone, or a zombie nobody has reaped yet: either way it serves nothing.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if !alive(pid) {
			return
		}
	}
	t.Fatalf("manager %d still runs after SIGKILL", pid)
}

// TestRefusedJobSetReleasesItsPools: a seed JobSet whose pod template the
// API server refuses says why and does not keep its pools from the next one.
func TestRefusedJobSetReleasesItsPools(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	c, _ := framework.StartCluster(t)
	ctx := context.Background()
	bad := seedCopy(t, "bad", "")
	bad.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.DNSPolicy = "Bogus"
	if err := c.Objects.Create(ctx, bad); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) (bool, string) {
		var got api.JobSet
		if err := c.Objects.Get(ctx, client.ObjectKeyFromObject(bad), &got); err != nil {
			return false, err.Error()
		}
		created, placed := condition(&got, "ChildJobsCreated"), condition(&got, "TopologyAssigned")
		return created != nil && created.Status == metav1.ConditionFalse && strings.Contains(created.Message, "dnsPolicy") &&
				placed != nil && placed.Reason == "JobCreationRefused",
			fmt.Sprintf("ChildJobsCreated %+v, TopologyAssigned %+v", created, placed)
	})
	good := seedCopy(t, "good", "")
	if err := c.Objects.Create(ctx, good); err != nil {
		t.Fatal(err)
	}
	runningOnDistinctPools(t, c, "good", 0)
}

func condition(js *api.JobSet, typ string) *metav1.Condition {
	for i := range js.Status.Conditions {
		if js.Status.Conditions[i].Type == typ {
			return &js.Status.Conditions[i]
		}
	}
	return nil
}

// TestPodsRefusedReleasesItsPools: a seed JobSet naming a PriorityClass
// that does not exist is refused at admission, naming the field. One
// whose Jobs are created but whose pods are refused (its namespace's
// ResourceQuota allows no pod) says so with the Job controller's
// message, and lets its pools go after a bounded wait, so the valid
// JobSet behind it runs.
func TestPodsRefusedReleasesItsPools(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	c, _ := framework.StartCluster(t)
	ctx := context.Background()
	typo := seedCopy(t, "typo", "")
	typo.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.PriorityClassName = "nope"
	err := c.Objects.Create(ctx, typo)
	if err == nil || !strings.Contains(err.Error(), "spec.replicatedJobs[0].template.spec.template.spec.priorityClassName: Not found") || !strings.Contains(err.Error(), "no such PriorityClass") {
		t.Fatalf("a JobSet naming PriorityClass nope: %v, want it refused naming the field", err)
	}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "no-pods"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "no-pods", Namespace: "no-pods"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}}
	if _, err := c.Client.CoreV1().ResourceQuotas("no-pods").Create(ctx, quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The API server enforces a quota it has seen: until then a pod would
	// still be admitted (seen in CI: the JobSet's pods were created).
	probe := testobj.NewPod("no-pods", "probe").Obj()
	probe.Spec.Containers = []corev1.Container{{Name: "c", Image: "busybox"}}
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) (bool, string) {
		_, err := c.Client.CoreV1().Pods("no-pods").Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "exceeded quota"), fmt.Sprintf("a pod in no-pods: %v", err)
	})
	bad := seedCopy(t, "typo", "")
	bad.Namespace = "no-pods"
	if err := c.Objects.Create(ctx, bad); err != nil {
		t.Fatal(err)
	}
	good := seedCopy(t, "good", "")
	began := time.Now()
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) (bool, string) {
		var got api.JobSet
		if err := c.Objects.Get(ctx, client.ObjectKeyFromObject(bad), &got); err != nil {
			return false, err.Error()
		}
		created := condition(&got, "ChildPodsCreated")
		return created != nil && created.Status == metav1.ConditionFalse && created.Reason == "PodCreationFailed" &&
			strings.Contains(created.Message, "exceeded quota"), fmt.Sprintf("ChildPodsCreated %+v", created)
	})
	t.Logf("ChildPodsCreated=False %s after the JobSet was created", time.Since(began).Round(100*time.Millisecond))
	if out := c.MustRun("status", "typo", "-n", "no-pods"); !strings.Contains(out, "PodCreationFailed") {
		t.Errorf("multislice status typo does not show why its pods are missing:\n%s", out)
	}
	if err := c.Objects.Create(ctx, good); err != nil {
		t.Fatal(err)
	}
	runningOnDistinctPools(t, c, "good", 0)
	t.Logf("the valid JobSet behind it Running %s after the bad one was created", time.Since(began).Round(100*time.Millisecond))
	var got api.JobSet
	if err := c.Objects.Get(ctx, client.ObjectKeyFromObject(bad), &got); err != nil {
		t.Fatal(err)
	}
	if placed := condition(&got, "TopologyAssigned"); placed == nil || placed.Status != metav1.ConditionFalse {
		t.Errorf("TopologyAssigned of the refused JobSet: %+v, want False", placed)
	}
}
