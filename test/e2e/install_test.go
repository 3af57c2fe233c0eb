package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/install"
	"github.com/multislice/multislice/internal/localcluster"
	"github.com/multislice/multislice/internal/manager"
	"github.com/multislice/multislice/internal/release"
	"github.com/multislice/multislice/test/framework"
)

// TestInstalledAsShipped applies dist/install.yaml (as `make release`
// renders it) to a cluster without our manager, then runs two managers as
// host processes authenticated only as the shipped ServiceAccount (a
// TokenRequest token), with leader election. Through them: the seed runs on
// four pools, a pod failure restarts it, a broken host fails its slice;
// then the leader is killed with SIGKILL mid-restart and the standby takes
// over: one restart, no duplicate Job, 8 pods Running at the next attempt.
// A forbidden request in either manager's log fails the test.
func TestInstalledAsShipped(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	kubectl := requireKubectl(t)
	c, _ := framework.StartCluster(t, "--no-manager", "--repair-delay=12s")
	ctx := context.Background()
	if out, err := kubectl(c, "apply", "--server-side", "-f", installYAML(t)); err != nil {
		t.Fatalf("kubectl apply --server-side -f install.yaml: %v\n%s", err, out)
	}
	kubeconfig := shippedServiceAccount(t, c)
	managers := []*hostManager{startHostManager(t, c, kubeconfig, "a"), startHostManager(t, c, kubeconfig, "b")}

	js := seedCopy(t, "multislice-job", "")
	js.Spec.FailurePolicy.MaxRestarts = 10
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) (bool, string) {
		err := c.Objects.Create(ctx, js) // the CRD and the webhooks may need a moment
		return err == nil, fmt.Sprint(err)
	})
	pods := runningOnDistinctPools(t, c, "multislice-job", 0)
	if err := c.Client.CoreV1().Pods("default").Delete(ctx, pods[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	runningOnDistinctPools(t, c, "multislice-job", 1)
	pool := poolOfSlice(t, ctx, c, 1)
	c.MustRun("chaos", "fail-host", "--nodepool", pool)
	runningOnDistinctPools(t, c, "multislice-job", 2)

	// Failover: kill the leader right after a restart begins.
	leader := leaderOf(t, managers)
	if leader == nil {
		t.Fatal("no manager says it acquired the lease")
	}
	pods = runningOnDistinctPools(t, c, "multislice-job", 2)
	if err := c.Client.CoreV1().Pods("default").Delete(ctx, pods[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	killed := time.Now()
	_ = leader.cmd.Process.Signal(syscall.SIGKILL)
	_ = leader.cmd.Wait()
	var standby *hostManager
	for _, m := range managers {
		if m != leader {
			standby = m
		}
	}
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) (bool, string) {
		return leaderOf(t, managers) == standby, "the standby has not taken the lease"
	})
	tookOver := time.Since(killed)
	runningOnDistinctPools(t, c, "multislice-job", 3)
	var got api.JobSet
	if err := c.Objects.Get(ctx, client.ObjectKeyFromObject(js), &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Restarts != 3 {
		t.Errorf("restarts = %d after three faults, want 3 (none lost, none doubled)", got.Status.Restarts)
	}
	jobs, err := c.Client.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{LabelSelector: api.JobSetNameKey + "=multislice-job"})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs.Items) != 4 {
		t.Errorf("%d Jobs, want 4 (no duplicate)", len(jobs.Items))
	}
	t.Logf("leader %s killed: %s took the lease %s later; 8 pods Running at attempt 3 %s after the kill",
		leader.name, standby.name, tookOver.Round(100*time.Millisecond), time.Since(killed).Round(100*time.Millisecond))
	if tookOver > 15*time.Second {
		t.Errorf("failover took %s, want under 15 s", tookOver)
	}
	for _, m := range managers {
		if log, _ := os.ReadFile(m.log); strings.Contains(string(log), "forbidden") {
			t.Errorf("manager %s was refused a request with the shipped permissions:\n%s", m.name, grepLines(string(log), "forbidden"))
		}
	}
}

type hostManager struct {
	name, log string
	cmd       *exec.Cmd
}

// startHostManager runs `multislice manager` as a replica would run in the
// cluster (namespace, service-host environment, leader election, metrics
// behind authentication), its webhooks reached on the loopback.
func startHostManager(t *testing.T, c *framework.Cluster, kubeconfig, name string) *hostManager {
	t.Helper()
	webhook, metrics, probe := loopbackPort(t), loopbackPort(t), loopbackPort(t)
	dir := t.TempDir()
	m := &hostManager{name: name, log: filepath.Join(dir, "manager.log")}
	logFile, err := os.Create(m.log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logFile.Close() })
	u, _ := clientcmd.BuildConfigFromFlags("", kubeconfig)
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(u.Host, "https://"))
	f := manager.DefaultFlags() // namespace multislice-system, leader election on
	f.Kubeconfig = kubeconfig
	f.WebhookHost, f.WebhookPort, f.WebhookURL = "127.0.0.1", webhook, "https://127.0.0.1:"+strconv.Itoa(webhook)
	f.MetricsAddr, f.ProbeAddr = "127.0.0.1:"+strconv.Itoa(metrics), "127.0.0.1:"+strconv.Itoa(probe)
	f.CertDir = filepath.Join(dir, "certs")
	m.cmd = exec.Command(filepath.Join(framework.BinDir(t), "multislice"), append([]string{"manager"}, f.Args()...)...)
	m.cmd.Env = append(os.Environ(), "POD_NAMESPACE="+install.Namespace, "KUBERNETES_SERVICE_HOST="+host, "KUBERNETES_SERVICE_PORT="+port)
	m.cmd.Stdout, m.cmd.Stderr = logFile, logFile
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = m.cmd.Process.Kill()
		_, _ = m.cmd.Process.Wait()
	})
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(probe) + "/readyz")
		if err != nil {
			log, _ := os.ReadFile(m.log)
			return false, err.Error() + "; manager log:\n" + lastLines(string(log), 20)
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, "readyz " + resp.Status
	})
	return m
}

// leaderOf is the manager that has acquired the leader-election Lease and
// still runs.
func leaderOf(t *testing.T, managers []*hostManager) *hostManager {
	t.Helper()
	for _, m := range managers {
		log, _ := os.ReadFile(m.log)
		if m.cmd.ProcessState == nil && strings.Contains(string(log), "Successfully acquired lease") {
			return m
		}
	}
	return nil
}

// requireKubectl skips the test without kubectl and returns a runner of
// kubectl against a cluster, returning its combined output.
func requireKubectl(t *testing.T) func(c *framework.Cluster, args ...string) (string, error) {
	t.Helper()
	path, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed")
	}
	return func(c *framework.Cluster, args ...string) (string, error) {
		cmd := exec.Command(path, args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(c.Home, "kubeconfig"))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
}

// installYAML writes install.yaml as `make release` renders it and returns its path.
func installYAML(t *testing.T) string {
	t.Helper()
	manifest, err := release.Install("../../config/default", "example.com/multislice:e2e")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "install.yaml")
	if err := os.WriteFile(file, manifest, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// shippedServiceAccount returns a kubeconfig that authenticates as the
// shipped ServiceAccount, with a token from the TokenRequest API.
func shippedServiceAccount(t *testing.T, c *framework.Cluster) string {
	t.Helper()
	token, err := c.Client.CoreV1().ServiceAccounts(install.Namespace).CreateToken(context.Background(), "multislice-manager",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return serviceAccountKubeconfig(t, c, token.Status.Token)
}

func serviceAccountKubeconfig(t *testing.T, c *framework.Cluster, token string) string {
	return framework.WriteKubeconfig(t, c.Config.Host, c.Config.CAData, &clientcmdapi.AuthInfo{Token: token})
}

// loopbackPort is a free port below the ephemeral range, never handed out
// twice: an outgoing connection cannot take it before the manager binds it.
func loopbackPort(t *testing.T) int {
	p, err := localcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func grepLines(s, substr string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, substr) {
			out = append(out, line)
		}
	}
	if len(out) > 5 {
		out = out[:5]
	}
	return strings.Join(out, "\n")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
