// Command jobset benchmarks the JobSet controller on a local cluster:
//
//   - manager memory before and after 10,000 unrelated pods exist (the cache
//     must hold only JobSet-owned objects, so it should not grow);
//
//   - time from creating a JobSet of 1,000 replicas to all 1,000 child Jobs
//     existing, and to the status counting them;
//
//   - mean reconcile time, from controller-runtime's own histogram.
//
//     go run ./bench/jobset -replicas 1000 -noise 10000
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/testobj"
	"github.com/multislice/multislice/test/framework"
)

func main() {
	replicas := flag.Int("replicas", 1000, "replicas of the benchmark JobSet")
	noise := flag.Int("noise", 10000, "unrelated pods to create first")
	bin := flag.String("bin", "bin", "directory with multislice and the control-plane binaries")
	flag.Parse()
	if err := run(*bin, *replicas, *noise); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

type state struct {
	Processes []struct {
		Name  string
		PID   int
		Ports []int
	}
}

func run(bin string, replicas, noise int) error {
	c, err := framework.Up(bin, "", nil)
	if err != nil {
		return err
	}
	defer c.Down()
	home, cs, cl := c.Home, c.Client, c.Objects
	var st state
	data, _ := os.ReadFile(filepath.Join(home, "state.json"))
	if err := json.Unmarshal(data, &st); err != nil {
		return err
	}
	var pid, metricsPort int
	for _, p := range st.Processes {
		if p.Name == "multislice-manager" {
			pid, metricsPort = p.PID, p.Ports[1]
		}
	}
	ctx := context.Background()
	fmt.Printf("manager RSS, idle:                        %s\n", rss(pid))

	began := time.Now()
	if err := createNoise(ctx, cs, noise); err != nil {
		return err
	}
	fmt.Printf("created %d unrelated pods in %.1fs\n", noise, time.Since(began).Seconds())
	time.Sleep(5 * time.Second)
	fmt.Printf("manager RSS, with %d unrelated pods:   %s\n", noise, rss(pid))

	js := testobj.NewJobSet("default", "bench").ReplicatedJob("w", int32(replicas), 1).Obj()
	// Gated pods never schedule: the benchmark measures the controller, not kwok.
	js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "bench/hold"}}
	began = time.Now()
	if err := cl.Create(ctx, js); err != nil {
		return err
	}
	var allJobs, counted time.Duration
	for allJobs == 0 || counted == 0 {
		if allJobs == 0 {
			jobs, err := cs.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{LabelSelector: api.JobSetNameKey + "=bench", ResourceVersion: "0"})
			if err == nil && len(jobs.Items) == replicas {
				allJobs = time.Since(began)
			}
		}
		if counted == 0 {
			var got api.JobSet
			if err := cl.Get(ctx, client.ObjectKeyFromObject(js), &got); err == nil && len(got.Status.ReplicatedJobsStatus) == 1 {
				s := got.Status.ReplicatedJobsStatus[0]
				if int(s.Active+s.Ready+s.Suspended) >= replicas || allJobs != 0 && s.Name == "w" {
					counted = time.Since(began)
				}
			}
		}
		if time.Since(began) > 5*time.Minute {
			return fmt.Errorf("timed out waiting for %d jobs", replicas)
		}
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Printf("JobSet of %d replicas: all child Jobs created in %.2fs (%.0f Jobs/s)\n", replicas, allJobs.Seconds(), float64(replicas)/allJobs.Seconds())
	time.Sleep(5 * time.Second)
	sum, count := reconcileTime(metricsPort)
	fmt.Printf("reconciles: %d, mean reconcile time %.1f ms (controller_runtime_reconcile_time_seconds, controller=jobset)\n", int(count), 1000*sum/count)
	fmt.Printf("manager RSS, after the JobSet:            %s\n", rss(pid))
	return nil
}

func createNoise(ctx context.Context, cs kubernetes.Interface, n int) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "noise"}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return err
	}
	errs := make([]error, n)
	workqueue.ParallelizeUntil(ctx, 64, n, func(i int) {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "noise-" + strconv.Itoa(i), Labels: map[string]string{"app": "noise"}},
			Spec: corev1.PodSpec{
				SchedulingGates:               []corev1.PodSchedulingGate{{Name: "bench/hold"}},
				TerminationGracePeriodSeconds: ptr.To(int64(0)),
				Containers:                    []corev1.Container{{Name: "c", Image: "busybox"}},
			},
		}
		_, errs[i] = cs.CoreV1().Pods("noise").Create(ctx, pod, metav1.CreateOptions{})
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func rss(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return fmt.Sprintf("%d MiB", kb/1024)
		}
	}
	return "?"
}

// reconcileTime reads the sum and count of the jobset controller's
// reconcile-time histogram from the manager's /metrics.
func reconcileTime(port int) (sum, count float64) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		return 0, 1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, `controller="jobset"`) {
			continue
		}
		fields := strings.Fields(line)
		v, _ := strconv.ParseFloat(fields[len(fields)-1], 64)
		switch {
		case strings.HasPrefix(line, "controller_runtime_reconcile_time_seconds_sum"):
			sum = v
		case strings.HasPrefix(line, "controller_runtime_reconcile_time_seconds_count"):
			count = v
		}
	}
	if count == 0 {
		count = 1
	}
	return sum, count
}
