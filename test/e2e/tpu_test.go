package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/testobj"
	"github.com/multislice/multislice/test/framework"
)

// resolve gives an env var's value as the kubelet would: literal values as
// they are, downward-API annotation references from the pod's annotations.
func resolve(p corev1.Pod, c corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name != name {
			continue
		}
		if e.ValueFrom == nil {
			return e.Value, true
		}
		path := e.ValueFrom.FieldRef.FieldPath
		key := strings.TrimSuffix(strings.TrimPrefix(path, "metadata.annotations['"), "']")
		v, ok := p.Annotations[key]
		return v, ok
	}
	return "", false
}

// TestTPUEnvironment: the seed's pods get GKE's TPU environment; a plain
// Indexed TPU Job gets the worker variables; a Job without TPUs is never
// touched and is created even while the manager is down.
func TestTPUEnvironment(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	c, _ := framework.StartCluster(t)
	ctx := context.Background()
	cl := c.Objects
	js := seedCopy(t, "multislice-job", "")
	if err := cl.Create(ctx, js); err != nil {
		t.Fatal(err)
	}
	pods := waitRunning(t, ctx, c, 0, anyName)
	for _, p := range pods {
		j, _ := strconv.Atoi(p.Annotations[api.JobIndexKey])
		i, _ := strconv.Atoi(p.Annotations[batchv1.JobCompletionIndexAnnotation])
		want := map[string]string{
			"TPU_WORKER_ID":                 strconv.Itoa(i),
			"TPU_WORKER_HOSTNAMES":          fmt.Sprintf("multislice-job-slice-%d-0.multislice-job,multislice-job-slice-%d-1.multislice-job", j, j),
			"MEGASCALE_NUM_SLICES":          "4",
			"MEGASCALE_SLICE_ID":            strconv.Itoa(j),
			"MEGASCALE_COORDINATOR_ADDRESS": "multislice-job-slice-0-0.multislice-job",
			"TPU_ACCELERATOR_TYPE":          "v4-16",
			"TPU_TOPOLOGY":                  "2x2x2",
			"TPU_SKIP_MDS_QUERY":            "true",
			"JOBSET_RESTART_ATTEMPT":        "0",
		}
		for k, v := range want {
			if got, ok := resolve(p, p.Spec.Containers[0], k); !ok || got != v {
				t.Errorf("pod %s: %s = %q (%v), want %q", p.Name, k, got, ok, v)
			}
		}
	}

	indexed := tpuIndexedJob("plain", true)
	if _, err := c.Client.BatchV1().Jobs("default").Create(ctx, indexed, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, _ := c.Client.BatchV1().Jobs("default").Get(ctx, "plain", metav1.GetOptions{})
	env := map[string]string{}
	for _, e := range got.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	if env["TPU_WORKER_HOSTNAMES"] != "plain-0.workers,plain-1.workers" {
		t.Errorf("plain Indexed TPU Job env = %v", env)
	}
	if _, ok := env["MEGASCALE_NUM_SLICES"]; ok {
		t.Errorf("MEGASCALE_* in a Job no JobSet owns: %v", env)
	}

	// Stop the manager: Jobs without TPUs still go through, untouched.
	stopManager(t, c.Home)
	cpu := tpuIndexedJob("cpu-only", false)
	framework.Eventually(t, 20*time.Second, func(ctx context.Context) (bool, string) {
		_, err := c.Client.BatchV1().Jobs("default").Create(ctx, cpu, metav1.CreateOptions{})
		return err == nil, fmt.Sprintf("creating a Job without TPUs while the manager is down: %v", err)
	})
	got, _ = c.Client.BatchV1().Jobs("default").Get(ctx, "cpu-only", metav1.GetOptions{})
	if n := len(got.Spec.Template.Spec.Containers[0].Env); n != 0 {
		t.Errorf("a Job without TPUs got %d env vars", n)
	}
	_, err := c.Client.BatchV1().Jobs("default").Create(ctx, tpuIndexedJob("tpu-while-down", true), metav1.CreateOptions{})
	if err == nil {
		t.Errorf("a TPU Job was admitted without its environment while the manager is down")
	}
}

var anyName = regexp.MustCompile(`^multislice-job-slice-[0-3]-[01]-[a-z0-9]{5}$`)

func tpuIndexedJob(name string, tpu bool) *batchv1.Job {
	j := testobj.NewJob("", name).Indexed(2).BackoffLimit(0).PodSpec(corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever, Subdomain: "workers",
		Containers: []corev1.Container{{Name: "main", Image: "busybox"}},
	}).Obj()
	testobj.TPU(&j.Spec.Template.Spec, "tpu-v4-podslice", "2x2x2", "4")
	if !tpu {
		j.Spec.Template.Spec.Containers[0].Resources.Limits = nil
		j.Spec.Template.Spec.NodeSelector = nil
	}
	return j
}

// stopManager kills the multislice-manager process of the cluster.
func stopManager(t *testing.T, home string) {
	data, err := os.ReadFile(filepath.Join(home, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Processes []struct {
			Name string
			PID  int
		}
	}
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	for _, p := range st.Processes {
		if p.Name == "multislice-manager" {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
			for i := 0; i < 100 && running(p.PID); i++ {
				time.Sleep(50 * time.Millisecond)
			}
			return
		}
	}
	t.Fatal("no multislice-manager in state.json")
}
