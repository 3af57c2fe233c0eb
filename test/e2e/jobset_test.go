package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/test/framework"
)

// TestSeedJobSet applies the seed's YAML verbatim on `multislice up`: four
// child Jobs of two pods, the headless Service, restart-all when one pod is
// deleted, and Failed/ReachedMaxRestarts after four more failures.
func TestSeedJobSet(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	c, _ := framework.StartCluster(t)
	ctx := context.Background()
	cl := c.Objects
	// With the InPlaceRestart gate off (the default), as upstream: refused.
	err := cl.Create(ctx, inPlaceExample(t), client.DryRunAll)
	if err == nil || !strings.Contains(err.Error(), "spec.failurePolicy.restartStrategy") || !strings.Contains(err.Error(), "InPlaceRestart feature gate") {
		t.Errorf("in-place example with the gate off: got %v, want a refusal naming the gate", err)
	}
	js := seedCopy(t, "multislice-job", "")
	if err := cl.Create(ctx, js); err != nil {
		t.Fatal(err)
	}
	podName := regexp.MustCompile(`^multislice-job-slice-[0-3]-[01]-[a-z0-9]{5}$`)
	running := waitRunning(t, ctx, c, 0, podName)

	var svc corev1.Service
	if err := cl.Get(ctx, types.NamespacedName{Namespace: "default", Name: "multislice-job"}, &svc); err != nil || svc.Spec.ClusterIP != "None" {
		t.Errorf("headless service multislice-job: %v %+v", err, svc.Spec)
	}
	jobs, err := c.Client.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	oldUIDs := map[types.UID]bool{}
	for i, j := range jobs.Items {
		if want := fmt.Sprintf("multislice-job-slice-%d", i); j.Name != want {
			t.Errorf("job %d is %s, want %s", i, j.Name, want)
		}
		oldUIDs[j.UID] = true
	}

	began := time.Now()
	if err := c.Client.CoreV1().Pods("default").Delete(ctx, running[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, ctx, c, 1, podName)
	t.Logf("one pod deleted -> all 8 pods Running at restart-attempt 1 in %s", time.Since(began).Round(10*time.Millisecond))
	if err := cl.Get(ctx, client.ObjectKeyFromObject(js), js); err != nil {
		t.Fatal(err)
	}
	if js.Status.Restarts != 1 {
		t.Errorf("restarts = %d, want 1", js.Status.Restarts)
	}
	jobs, _ = c.Client.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{})
	for _, j := range jobs.Items {
		if oldUIDs[j.UID] || j.Labels[api.RestartsKey] != "1" {
			t.Errorf("job %s was not recreated for attempt 1 (labels %v)", j.Name, j.Labels)
		}
	}

	for attempt := 2; attempt <= 5; attempt++ {
		pods := waitRunning(t, ctx, c, attempt-1, podName)
		if err := c.Client.CoreV1().Pods("default").Delete(ctx, pods[len(pods)-1].Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if attempt == 5 {
			break
		}
	}
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(js), js); err != nil {
			return false, err.Error()
		}
		cond := meta.FindStatusCondition(js.Status.Conditions, "Failed")
		return cond != nil && cond.Status == metav1.ConditionTrue && cond.Reason == "ReachedMaxRestarts" && js.Status.TerminalState == "Failed",
			fmt.Sprintf("restarts %d, conditions %+v", js.Status.Restarts, js.Status.Conditions)
	})
	if js.Status.Restarts != 4 {
		t.Errorf("restarts = %d at failure, want 4 (maxRestarts)", js.Status.Restarts)
	}
}

// waitRunning waits until the 8 pods of one restart attempt are Running.
func waitRunning(t *testing.T, ctx context.Context, c *framework.Cluster, attempt int, name *regexp.Regexp) []corev1.Pod {
	t.Helper()
	var running []corev1.Pod
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
		pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{
			LabelSelector: fmt.Sprintf("%s=multislice-job,%s=%d", api.JobSetNameKey, api.RestartsKey, attempt),
		})
		if err != nil {
			return false, err.Error()
		}
		running = running[:0]
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				if !name.MatchString(p.Name) {
					t.Errorf("pod name %s does not follow <jobset>-<rjob>-<job>-<pod>-<5 chars>", p.Name)
				}
				running = append(running, p)
			}
		}
		return len(running) == 8, fmt.Sprintf("%d of 8 pods Running at attempt %d", len(running), attempt)
	})
	return running
}
