package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/cli/chaos"
	"github.com/multislice/multislice/test/framework"
)

// TestAutoRepair injects each fault into a slice of the seed JobSet (with a
// spare pool in the group) and measures, for each, the time from the fault
// to the restart (detection) and to all 8 pods Running again at the next
// restart attempt, on healthy pools only.
func TestAutoRepair(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	// The repair comes after the 10 s NotReady grace, so each fault is
	// detected by the manager, not by the repair tearing the slice down.
	c, _ := framework.StartCluster(t, "--repair-delay=12s")
	cl := c.Objects
	ctx := context.Background()
	js := seedCopy(t, "multislice-job", "")
	js.Spec.FailurePolicy.MaxRestarts = 10
	if err := cl.Create(ctx, js); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, ctx, c, 0, anyName)
	for attempt, fault := range []string{"fail-pod", "maintenance", "preempt", "fail-host"} {
		pool := poolOfSlice(t, ctx, c, 1)
		began := time.Now()
		out := c.MustRun("chaos", fault, "--nodepool", pool)
		var detected time.Duration
		framework.Eventually(t, 30*time.Second, func(ctx context.Context) (bool, string) {
			var got api.JobSet
			if err := cl.Get(ctx, client.ObjectKeyFromObject(js), &got); err != nil {
				return false, err.Error()
			}
			if int(got.Status.Restarts) > attempt {
				detected = time.Since(faultAt(out, began))
				return true, ""
			}
			return false, fmt.Sprintf("restarts %d after %s", got.Status.Restarts, fault)
		})
		waitRunning(t, ctx, c, attempt+1, anyName)
		total := time.Since(began)
		t.Logf("%-11s on %s: restart after %5.2fs, all 8 pods Running at attempt %d after %5.2fs (%s)",
			fault, pool, detected.Seconds(), attempt+1, total.Seconds(), strings.TrimSpace(out))
		if fault != "fail-pod" {
			for s := 0; s < 4; s++ {
				if p := poolOfSlice(t, ctx, c, s); p == pool {
					t.Errorf("after %s, slice %d runs on the broken pool %s again", fault, s, pool)
				}
			}
		}
		if limit := map[bool]time.Duration{true: 12 * time.Second, false: 2 * time.Second}[fault == "fail-host"]; detected > limit {
			t.Errorf("%s detected after %s", fault, detected)
		}
		// Let the simulated cloud repair the pool before the next fault.
		framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
			out := c.MustRun("nodepool", "status", "-l", "MultisliceGroup=multislice-group-1")
			return strings.Contains(out, "(4 slices + 1 spare healthy"), out
		})
	}
}

// faultAt is when `multislice chaos` says it made the fault (its output
// opens with the time of day, UTC), or began if it does not say: the
// detection is timed from the fault, not from the command's start, which
// on a busy machine took a second of its own.
func faultAt(out string, began time.Time) time.Time {
	f := strings.Fields(out)
	if len(f) == 0 {
		return began
	}
	clock, err := time.Parse(chaos.TimeLayout, f[0])
	if err != nil {
		return began
	}
	day := began.UTC()
	at := time.Date(day.Year(), day.Month(), day.Day(), clock.Hour(), clock.Minute(), clock.Second(), clock.Nanosecond(), time.UTC)
	if at.Before(began.Add(-time.Hour)) { // past midnight since began
		at = at.AddDate(0, 0, 1)
	}
	return at
}

// TestRepairWaitsForCapacity: with no spare pool and no spare capacity, a
// preempted slice leaves the JobSet waiting with a clear condition; when
// capacity returns, the slice is recreated and the JobSet runs again.
func TestRepairWaitsForCapacity(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	fleetFile := framework.FleetFile(t, "{name: multislice-group-1, accelerator: tpu-v4-podslice, topology: 2x2x2, slices: 4}")
	c, _ := framework.StartCluster(t, "--fleet", fleetFile, "--repair-delay=2s")
	cl := c.Objects
	ctx := context.Background()
	js := seedCopy(t, "multislice-job", "")
	if err := cl.Create(ctx, js); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, ctx, c, 0, anyName)
	c.MustRun("chaos", "capacity", "--accelerator=tpu-v4-podslice", "--unavailable=2")
	pool := poolOfSlice(t, ctx, c, 2)
	began := time.Now()
	c.MustRun("chaos", "preempt", "--nodepool", pool)
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) (bool, string) {
		var got api.JobSet
		if err := cl.Get(ctx, client.ObjectKeyFromObject(js), &got); err != nil {
			return false, err.Error()
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, "TopologyAssigned")
		return got.Status.Restarts == 1 && cond != nil && cond.Status == metav1.ConditionFalse &&
				strings.Contains(cond.Message, "needs 4 free tpu-v4-podslice 2x2x2 pools") && strings.Contains(cond.Message, "no group has that many free now"),
			fmt.Sprintf("restarts %d, conditions %+v", got.Status.Restarts, got.Status.Conditions)
	})
	time.Sleep(4 * time.Second) // past the repair delay: still no capacity, still waiting
	if n := runningPods(t, c, "multislice-job"); n != 0 {
		t.Fatalf("%d pods Running while the JobSet waits for capacity", n)
	}
	c.MustRun("chaos", "capacity", "--accelerator=tpu-v4-podslice", "--unavailable=0")
	waitRunning(t, ctx, c, 1, anyName)
	t.Logf("preempted without capacity: all 8 pods Running again %.1fs after the fault (capacity returned after ~%.0fs)",
		time.Since(began).Seconds(), 4.0)
	var got api.JobSet
	if err := cl.Get(ctx, client.ObjectKeyFromObject(js), &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Restarts != 1 {
		t.Errorf("restarts = %d, want 1: waiting for capacity must not restart again", got.Status.Restarts)
	}
	jobs, _ := c.Client.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{})
	if len(jobs.Items) != 4 {
		t.Errorf("%d Jobs, want 4: no Job may be duplicated", len(jobs.Items))
	}
}

// poolOfSlice is the node pool placement gave slice i of multislice-job.
func poolOfSlice(t *testing.T, ctx context.Context, c *framework.Cluster, i int) string {
	return poolOf(t, c, fmt.Sprintf("multislice-job-slice-%d", i))
}

// poolOf is the node pool placement gave a child Job.
func poolOf(t *testing.T, c *framework.Cluster, job string) string {
	var pool string
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) (bool, string) {
		j, err := c.Client.BatchV1().Jobs("default").Get(ctx, job, metav1.GetOptions{})
		if err != nil || j.DeletionTimestamp != nil {
			return false, fmt.Sprint(err)
		}
		pool = j.Annotations[api.AssignedDomainAnnotation]
		return pool != "", "no assigned domain yet"
	})
	return pool
}

// TestRestartGrace: pods that take their whole 30 s grace period to stop
// (simulate-graceful-stop) delay a restart by that much; the opt-in
// restart-grace-period-seconds knob removes the wait.
func TestRestartGrace(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	c, _ := framework.StartCluster(t)
	cl := c.Objects
	ctx := context.Background()
	for _, knob := range []bool{false, true} {
		js := seedCopy(t, "multislice-job", "")
		js.Spec.ReplicatedJobs[0].Template.Spec.Template.Annotations = map[string]string{"multislice.dev/simulate-graceful-stop": "true"}
		if knob {
			js.Annotations[api.RestartGracePeriodAnnotation] = "0"
		}
		if err := cl.Create(ctx, js); err != nil {
			t.Fatal(err)
		}
		waitRunning(t, ctx, c, 0, anyName)
		began := time.Now()
		c.MustRun("chaos", "fail-pod", "--nodepool", poolOfSlice(t, ctx, c, 0))
		waitRunning(t, ctx, c, 1, anyName)
		took := time.Since(began)
		t.Logf("pods with a 30 s grace, knob %v: all 8 pods Running at the next attempt after %.1fs", knob, took.Seconds())
		if knob && took > 10*time.Second || !knob && (took < 25*time.Second || took > 45*time.Second) {
			t.Errorf("knob %v: restart took %s", knob, took)
		}
		if err := cl.Delete(ctx, js, client.PropagationPolicy(metav1.DeletePropagationForeground), client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, 90*time.Second, func(ctx context.Context) (bool, string) {
			pods := scheduledPods(t, c, "")
			var got api.JobSet
			gone := cl.Get(ctx, client.ObjectKeyFromObject(js), &got) != nil
			return pods == 0 && gone, fmt.Sprintf("%d pods left", pods)
		})
	}
}

// TestFailedSliceStopsItsPods: a slice that slice health fails, in a JobSet
// with no restart left, stops every pod, those on its healthy hosts
// included: the JobSet fails and nothing of it keeps its pools.
func TestFailedSliceStopsItsPods(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	// No repair during the test: the maintenance must not end the pods.
	c, _ := framework.StartCluster(t, "--repair-delay=10m")
	cl := c.Objects
	ctx := context.Background()
	js := seedCopy(t, "multislice-job", "")
	js.Spec.FailurePolicy.MaxRestarts = 0
	if err := cl.Create(ctx, js); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, ctx, c, 0, anyName)
	c.MustRun("chaos", "maintenance", "--nodepool", poolOfSlice(t, ctx, c, 1))
	began := time.Now()
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) (bool, string) {
		var got api.JobSet
		if err := cl.Get(ctx, client.ObjectKeyFromObject(js), &got); err != nil {
			return false, err.Error()
		}
		return meta.IsStatusConditionTrue(got.Status.Conditions, string(api.JobSetFailed)), fmt.Sprintf("conditions %+v", got.Status.Conditions)
	})
	framework.Eventually(t, 60*time.Second, func(context.Context) (bool, string) {
		n := runningPods(t, c, "multislice-job")
		return n == 0, fmt.Sprintf("%d pods of the failed JobSet still Running", n)
	})
	t.Logf("failed slice, no restart left: JobSet failed and all its pods stopped %.1fs after the fault", time.Since(began).Seconds())
}

func TestFaultAt(t *testing.T) {
	began := time.Date(2026, 12, 7, 11, 29, 36, 0, time.UTC)
	for _, tc := range []struct {
		out  string
		want time.Time
	}{
		{"11:29:37.327 pod default/p exits with code 137\n", time.Date(2026, 12, 7, 11, 29, 37, 327e6, time.UTC)},
		{"no time here", began},
		{"", began},
	} {
		if got := faultAt(tc.out, began); !got.Equal(tc.want) {
			t.Errorf("faultAt(%q) = %s, want %s", tc.out, got, tc.want)
		}
	}
	late := time.Date(2026, 12, 7, 23, 59, 59, 0, time.UTC)
	if got, want := faultAt("00:00:00.500 x", late), time.Date(2026, 12, 8, 0, 0, 0, 500e6, time.UTC); !got.Equal(want) {
		t.Errorf("past midnight: %s, want %s", got, want)
	}
}
