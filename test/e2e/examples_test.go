package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/multislice/multislice/test/framework"
)

// exampleUp is the one `multislice up` every example's comment asks for.
var exampleUp = []string{"--feature-gates=InPlaceRestart=true"}

// TestExamples applies every file under examples/ as its comment says (the
// comment's `kubectl` lines, run from the repository root, in order) on one
// local cluster, checks the state the comment promises, and deletes it
// before the next one (they share the seed's group).
func TestExamples(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	kubectl := requireKubectl(t)
	root, _ := filepath.Abs("../..")
	examples := []struct {
		file    string
		reached func(t *testing.T, c *framework.Cluster)
	}{
		{"examples/tpu-indexed-job.yaml", func(t *testing.T, c *framework.Cluster) {
			framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
				job, err := c.Client.BatchV1().Jobs("default").Get(ctx, "tpu-hello", metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				for _, cond := range job.Status.Conditions {
					if cond.Type == batchv1.JobComplete && cond.Status == corev1.ConditionTrue {
						return true, ""
					}
				}
				return false, fmt.Sprintf("Job tpu-hello: %d succeeded, conditions %v", job.Status.Succeeded, job.Status.Conditions)
			})
		}},
		{"examples/seed-multislice-job.yaml", func(t *testing.T, c *framework.Cluster) {
			runningOnDistinctPools(t, c, "multislice-job", 0)
		}},
		{"examples/in-place-restart.yaml", func(t *testing.T, c *framework.Cluster) {
			inPlaceAttempt(t, c, "in-place-job", 0)
			runningOnDistinctPools(t, c, "in-place-job", 0)
		}},
		{"examples/checkpoint/jobset.yaml", func(t *testing.T, c *framework.Cluster) {
			runningOnDistinctPools(t, c, "resumable-train", 0)
			claims, err := c.Client.CoreV1().PersistentVolumeClaims("default").List(context.Background(), metav1.ListOptions{})
			if err != nil || len(claims.Items) != 1 || claims.Items[0].Status.Phase != corev1.ClaimBound {
				t.Errorf("the checkpoint claim: %v, %+v; want one, Bound", err, claims)
			}
		}},
	}
	covered := map[string]bool{}
	c, _ := framework.StartCluster(t, exampleUp...)
	for _, ex := range examples {
		commands, ups := exampleCommands(t, filepath.Join(root, ex.file))
		for _, up := range ups {
			if !strings.Contains(strings.Join(exampleUp, " "), up) {
				t.Errorf("%s asks for `multislice up %s`, which this test does not start", ex.file, up)
			}
		}
		if len(commands) == 0 {
			t.Errorf("%s: its comment says no `kubectl` command to apply it", ex.file)
			continue
		}
		ok := t.Run(filepath.Base(ex.file), func(t *testing.T) {
			began := time.Now()
			for _, file := range runKubectlLines(t, c, root, commands) {
				covered[file] = true
			}
			ex.reached(t, c)
			t.Logf("%s: as promised %s after `kubectl apply`", ex.file, time.Since(began).Round(100*time.Millisecond))
		})
		if !ok {
			return
		}
		if out, err := kubectl(c, "delete", "-f", filepath.Join(root, ex.file), "--wait=true", "--timeout=60s"); err != nil {
			t.Fatalf("delete %s: %v\n%s", ex.file, err, out)
		}
		waitNoPods(t, c)
	}
	for _, file := range append(append(realExamples, pathwaysExamples...), dynamicExamples...) { // their clusters are TestRealHosts's, TestPathways's and TestDynamicSlicing's
		covered[file] = true
	}
	for _, file := range exampleFiles(t, root) {
		if !covered[file] {
			t.Errorf("%s is not applied by any example's comment: say how to use it, and add it to TestExamples", file)
		}
	}
}

// runKubectlLines runs an example's `kubectl` lines from the repository
// root against c, and returns the example files they name.
func runKubectlLines(t *testing.T, c *framework.Cluster, root string, commands [][]string) (files []string) {
	t.Helper()
	for _, args := range commands {
		cmd := exec.Command("kubectl", args...)
		cmd.Dir, cmd.Env = root, append(os.Environ(), "KUBECONFIG="+filepath.Join(c.Home, "kubeconfig"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		for _, a := range args {
			if a = strings.TrimPrefix(a, "--from-file="); strings.HasPrefix(a, "examples/") {
				files = append(files, a)
			}
		}
	}
	return files
}

// exampleCommands reads the `kubectl ...` and `multislice up ...` lines of
// a file's leading comment (lines "#   kubectl ..."), without their own
// trailing comments.
func exampleCommands(t *testing.T, path string) (kubectl [][]string, ups []string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "#") {
			break
		}
		cmd, _, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "#")), " #")
		if rest, ok := strings.CutPrefix(cmd, "kubectl "); ok && strings.HasPrefix(line, "#   ") {
			kubectl = append(kubectl, strings.Fields(rest))
		}
		if rest, ok := strings.CutPrefix(cmd, "multislice up "); ok && strings.HasPrefix(line, "#   ") {
			ups = append(ups, strings.TrimSpace(rest))
		}
	}
	return kubectl, ups
}

// exampleFiles are the files under examples/, relative to root, but Go
// source: a program there (examples/trainer) has its own tests.
func exampleFiles(t *testing.T, root string) []string {
	var out []string
	err := filepath.WalkDir(filepath.Join(root, "examples"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) == ".go" {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitNoPods waits until the default namespace has no pods left.
func waitNoPods(t *testing.T, c *framework.Cluster) {
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
		pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 0, fmt.Sprintf("%d pods left in default", len(pods.Items))
	})
}
