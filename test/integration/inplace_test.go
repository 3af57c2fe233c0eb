package integration

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/features"
	"github.com/multislice/multislice/internal/testobj"
	"github.com/multislice/multislice/test/framework"
)

// inPlaceJobSet is replicas x pods workers shaped for InPlaceRestart.
func inPlaceJobSet(ns, name string, replicas, pods int32) *api.JobSet {
	return testobj.NewJobSet(ns, name).ReplicatedJob("w", replicas, pods).Edit(func(js *api.JobSet) {
		js.Spec.FailurePolicy = &api.FailurePolicy{MaxRestarts: 3, RestartStrategy: api.InPlaceRestart}
		s := &js.Spec.ReplicatedJobs[0].Template.Spec
		s.BackoffLimit, s.PodReplacementPolicy = ptr.To(int32(math.MaxInt32)), ptr.To(batchv1.Failed)
	}).Obj()
}

// TestInPlaceRestart runs the real agent (`multislice agent`, two
// processes) against a real API server and the controller: first start,
// an in-place restart of one pod that the other follows, the barrier
// released for both at the same attempt; and upstream's webhook rules.
func TestInPlaceRestart(t *testing.T) {
	gates := features.Defaults()
	gates.InPlaceRestart = true
	env := framework.StartEnv(t, gates)
	ctx := context.Background()
	ns := env.Namespace(t)

	t.Run("webhook refuses what cannot restart in place", func(t *testing.T) {
		for _, c := range []struct {
			edit        func(*batchv1.JobSpec)
			field, hint string
		}{
			{func(s *batchv1.JobSpec) { s.BackoffLimit = ptr.To(int32(0)) }, "template.spec.backoffLimit", "2147483647"},
			{func(s *batchv1.JobSpec) { s.PodReplacementPolicy = nil }, "template.spec.podReplacementPolicy", "must be Failed"},
			{func(s *batchv1.JobSpec) { s.Completions = ptr.To(int32(1)) }, "template.spec.completions", "set and equal"},
		} {
			js := inPlaceJobSet(ns, "bad", 1, 2)
			c.edit(&js.Spec.ReplicatedJobs[0].Template.Spec)
			err := env.Client.Create(ctx, js, client.DryRunAll)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), c.field) || !strings.Contains(err.Error(), c.hint) {
				t.Errorf("got %v, want 422 naming %s with %q", err, c.field, c.hint)
			}
		}
	})

	js := inPlaceJobSet(ns, "ipr", 1, 2)
	if err := env.Client.Create(ctx, js); err != nil {
		t.Fatal(err)
	}
	// envtest runs no Job controller and no kubelet: the test makes the two
	// pods and plays the kubelet (phase, restart counts, container starts).
	pods := []*corev1.Pod{runningPod(t, env.Client, ns, "ipr", "ipr-w-0-0"), runningPod(t, env.Client, ns, "ipr", "ipr-w-0-1")}
	kubeconfig := framework.WriteKubeconfig(t, env.Config.Host, env.Config.CAData, &clientcmdapi.AuthInfo{
		ClientCertificateData: env.Config.CertData, ClientKeyData: env.Config.KeyData, Token: env.Config.BearerToken})
	free := framework.FreePorts(t, 2)
	ports := []string{strconv.Itoa(free[0]), strconv.Itoa(free[1])}
	agents := make([]*exec.Cmd, 2)
	for i, p := range pods {
		agents[i] = startAgent(t, kubeconfig, ns, "ipr", p.Name, ports[i])
	}
	waitAttempts(t, env, ns, "ipr", 0, pods)
	for _, port := range ports {
		waitProbe(t, port)
	}

	// Pod 0's worker fails: the kubelet restarts all its containers (a new
	// agent process, a higher restart count).
	stopAgent(agents[0])
	bumpRestarts(t, env.Client, pods[0])
	agents[0] = startAgent(t, kubeconfig, ns, "ipr", pods[0].Name, ports[0])
	// Pod 1's agent must see its attempt become previous and exit with the
	// restart code, for its RestartAllContainers rule.
	exited := make(chan error, 1)
	go func() { exited <- agents[1].Wait() }()
	select {
	case err := <-exited:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("pod 1's agent ended with %v, want exit code 1", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("pod 1's agent did not exit to restart its pod in place")
	}
	bumpRestarts(t, env.Client, pods[1])
	agents[1] = startAgent(t, kubeconfig, ns, "ipr", pods[1].Name, ports[1])
	waitAttempts(t, env, ns, "ipr", 1, pods)
	for _, port := range ports {
		waitProbe(t, port)
	}
	got := env.Get(t, ns, "ipr")
	if ptr.Deref(got.Status.PreviousInPlaceRestartAttempt, -1) != 0 || got.Status.Restarts != 0 {
		t.Errorf("previous %v restarts %d, want 0 and 0 (an in-place restart recreates nothing)",
			got.Status.PreviousInPlaceRestartAttempt, got.Status.Restarts)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, string(api.JobSetInPlaceRestarting)); c == nil || c.Reason != api.AllPodsRestartedReason {
		t.Errorf("InPlaceRestarting = %+v, want reason %s", c, api.AllPodsRestartedReason)
	}

	// A pod whose container restarts beyond maxRestarts fails the JobSet.
	for i := 0; i < 3; i++ {
		bumpRestarts(t, env.Client, pods[0])
	}
	framework.Eventually(t, 20*time.Second, func(ctx context.Context) (bool, string) {
		js := env.Get(t, ns, "ipr")
		c := meta.FindStatusCondition(js.Status.Conditions, string(api.JobSetFailed))
		return c != nil && c.Reason == api.ReachedMaxRestartsReason, fmt.Sprintf("conditions %+v", js.Status.Conditions)
	})
}

func runningPod(t *testing.T, c client.Client, ns, jobset, name string) *corev1.Pod {
	t.Helper()
	p := testobj.NewPod(ns, name).Label(api.JobSetNameKey, jobset).Attempt(0).
		Edit(func(p *corev1.Pod) {
			p.Spec = corev1.PodSpec{NodeName: "node-" + name, Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}
		}).Obj()
	if err := c.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "main", Image: "busybox"}}}
	if err := c.Status().Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return p
}

func bumpRestarts(t *testing.T, c client.Client, p *corev1.Pod) {
	t.Helper()
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(p), p); err != nil {
		t.Fatal(err)
	}
	p.Status.ContainerStatuses[0].RestartCount++
	if err := c.Status().Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

func startAgent(t *testing.T, kubeconfig, ns, jobset, pod, port string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(filepath.Join(framework.BinDir(t), "multislice"), "agent", "--kubeconfig", kubeconfig)
	cmd.Env = append(os.Environ(), "POD_NAMESPACE="+ns, "JOBSET_NAME="+jobset, "POD_NAME="+pod, "STARTUP_PROBE_PORT="+port, "STARTUP_PROBE_HOST=127.0.0.1")
	log, err := os.Create(filepath.Join(t.TempDir(), pod+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopAgent(cmd)
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("agent of %s:\n%s", pod, b)
		}
	})
	return cmd
}

func stopAgent(cmd *exec.Cmd) {
	if cmd.ProcessState == nil {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
	}
}

func waitAttempts(t *testing.T, env *framework.Env, ns, jobset string, attempt int32, pods []*corev1.Pod) {
	t.Helper()
	framework.Eventually(t, 20*time.Second, func(ctx context.Context) (bool, string) {
		for _, p := range pods {
			var got corev1.Pod
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), &got); err != nil {
				return false, err.Error()
			}
			if got.Annotations[api.InPlaceRestartAttemptKey] != strconv.Itoa(int(attempt)) {
				return false, fmt.Sprintf("pod %s at attempt %q", p.Name, got.Annotations[api.InPlaceRestartAttemptKey])
			}
		}
		js := env.Get(t, ns, jobset)
		return ptr.Deref(js.Status.CurrentInPlaceRestartAttempt, -1) == attempt,
			fmt.Sprintf("current attempt %v", js.Status.CurrentInPlaceRestartAttempt)
	})
}

// waitProbe: the agent's startup probe passes (its barrier is down).
func waitProbe(t *testing.T, port string) {
	t.Helper()
	framework.Eventually(t, 10*time.Second, func(context.Context) (bool, string) {
		resp, err := http.Get("http://127.0.0.1:" + port + "/barrier-is-down")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
}
