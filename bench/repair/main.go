// Command repair measures recovery from each fault kind on the seed's
// JobSet (4 slices x 2 hosts, a spare pool in the group): time from the
// fault to the restart (detection), to the old pods gone, and to all 8 pods
// Running at the next attempt. It runs once with Multislice's slice health
// and once without it (the manager started with --no-slice-health and a
// slow cloud repair: what upstream JobSet alone does).
//
//	go run ./bench/repair
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/test/framework"
)

func main() {
	bin := flag.String("bin", "bin", "directory with multislice and the control-plane binaries")
	limit := flag.Duration("limit", 150*time.Second, "give up on one recovery after this long")
	flag.Parse()
	abs, _ := filepath.Abs(*bin)
	fmt.Printf("%-12s %-11s %10s %10s %10s\n", "mode", "fault", "detected", "old gone", "all Running")
	for _, mode := range []struct {
		name   string
		faults []string
		args   []string
		env    string
	}{
		{"multislice", []string{"fail-pod", "maintenance", "preempt", "delete-host", "fail-host"}, []string{"--repair-delay=12s"}, ""},
		{"no-repair", []string{"delete-host", "fail-host"}, []string{"--repair-delay=30m"}, "--no-slice-health"},
	} {
		if err := run(abs, mode.name, mode.faults, mode.args, mode.env, *limit); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

func run(bin, mode string, faults, upArgs []string, managerArgs string, limit time.Duration) error {
	c, err := framework.Up(bin, "", []string{"MULTISLICE_MANAGER_ARGS=" + managerArgs}, upArgs...)
	if err != nil {
		return err
	}
	defer c.Down()
	cs, cl, ms := c.Client, c.Objects, c.Run
	ctx := context.Background()
	seed, err := os.ReadFile(filepath.Join(filepath.Dir(bin), "examples", "seed-multislice-job.yaml"))
	if err != nil {
		return err
	}
	for i, fault := range faults {
		name := fmt.Sprintf("r%d", i)
		var js api.JobSet
		if err := yaml.Unmarshal([]byte(strings.ReplaceAll(string(seed), "multislice-job", name)), &js); err != nil {
			return err
		}
		js.Namespace = "default"
		js.Spec.FailurePolicy.MaxRestarts = 10
		if err := cl.Create(ctx, &js); err != nil {
			return err
		}
		if _, err := waitPods(ctx, cs, name, "0", 8, time.Minute); err != nil {
			return err
		}
		job, err := cs.BatchV1().Jobs("default").Get(ctx, name+"-slice-1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if out, err := ms("chaos", fault, "--nodepool", api.PinnedDomain(job)); err != nil {
			return fmt.Errorf("chaos: %v\n%s", err, out)
		}
		began := time.Now()
		var detected, oldGone, running time.Duration
		for time.Since(began) < limit && running == 0 {
			var got api.JobSet
			if detected == 0 && cl.Get(ctx, client.ObjectKeyFromObject(&js), &got) == nil && got.Status.Restarts > 0 {
				detected = time.Since(began)
			}
			if detected != 0 && oldGone == 0 {
				if n, _ := count(ctx, cs, name, "0", false); n == 0 {
					oldGone = time.Since(began)
				}
			}
			if oldGone != 0 {
				if n, _ := count(ctx, cs, name, "1", true); n == 8 {
					running = time.Since(began)
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		fmt.Printf("%-12s %-11s %10s %10s %10s\n", mode, fault, show(detected, limit), show(oldGone, limit), show(running, limit))
		_ = cl.Delete(ctx, &js, client.PropagationPolicy(metav1.DeletePropagationForeground), client.GracePeriodSeconds(0))
		_ = cs.CoreV1().Pods("default").DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))},
			metav1.ListOptions{LabelSelector: api.JobSetNameKey + "=" + name})
		// Wait for every pool of the group to be whole again.
		for t := 0; t < 120; t++ {
			out, _ := ms("nodepool", "status", "-l", "MultisliceGroup=multislice-group-1")
			if strings.Contains(out, "(4 slices + 1 spare healthy") || mode != "multislice" {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	return nil
}

func show(d, limit time.Duration) string {
	if d == 0 {
		return fmt.Sprintf(">%s", limit.Round(time.Second))
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

func count(ctx context.Context, cs kubernetes.Interface, js, attempt string, runningOnly bool) (int, error) {
	pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{
		LabelSelector: fmt.Sprintf("%s=%s,%s=%s", api.JobSetNameKey, js, api.RestartsKey, attempt)})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range pods.Items {
		if !runningOnly || p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n, nil
}

func waitPods(ctx context.Context, cs kubernetes.Interface, js, attempt string, want int, timeout time.Duration) (time.Duration, error) {
	began := time.Now()
	for time.Since(began) < timeout {
		if n, err := count(ctx, cs, js, attempt, true); err == nil && n >= want {
			return time.Since(began), nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return 0, fmt.Errorf("%s: not %d pods Running at attempt %s", js, want, attempt)
}
