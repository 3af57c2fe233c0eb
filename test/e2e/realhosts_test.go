package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/install"
	"github.com/multislice/multislice/internal/localcluster/realhost"
	"github.com/multislice/multislice/internal/localcluster/sim/fleet"
	"github.com/multislice/multislice/internal/versions"
	"github.com/multislice/multislice/test/framework"
)

// realExamples are the examples that ask for the cluster of
// examples/fleet-real.yaml; TestRealHosts applies them.
var realExamples = []string{"examples/fleet-real.yaml", "examples/real-tpu-jobset.yaml", "examples/trainer-jobset.yaml",
	"examples/trainer-in-place-jobset.yaml"}

// TestRealHosts runs examples/fleet-real.yaml: eight real hosts (kubelets
// and containerds on this machine) beside the seed's simulated group, with
// the manager in the cluster (--manager=in-cluster): two replicas in pods
// on real hosts from the image `up` pushed, webhooks through their
// Service, metrics over HTTPS with a token, leader election between pods.
// Real containers start from the local registry's images, resolve each
// other through the cluster DNS, are read by kubectl logs and multislice
// logs; a TPU JobSet on the real slices restarts with new containers; the
// seed runs on its simulated pools and restarts after each leader's pod is
// deleted; a real training job resumes from its checkpoint through every
// fault (trainer_test.go). `down` leaves nothing behind. It is the one test
// that does not call t.Parallel: it reads the machine's sysctls and iptables
// rules before and after, so no other real hosts may run beside it. `make
// test-e2e` runs it in a go test process of its own, beside the simulated
// clusters of the others, which touch neither.
func TestRealHosts(t *testing.T) {
	framework.RequireE2E(t)
	if os.Geteuid() != 0 {
		t.Skip("real hosts need root (cgroups, mounts, a bridge); run make test-e2e as root")
	}
	kubectl := requireKubectl(t)
	root, _ := filepath.Abs("../..")
	before, rulesBefore := readSysctls(), kubeRules()
	began := time.Now()
	c, _ := framework.StartCluster(t, "--fleet", filepath.Join(root, "examples/fleet-real.yaml"), "--manager=in-cluster",
		"--feature-gates=InPlaceRestart=true")
	t.Logf("multislice up with 8 real hosts, 10 simulated ones and the manager in the cluster took %s", time.Since(began).Round(10*time.Millisecond))
	ctx := context.Background()

	t.Run("real nodes", func(t *testing.T) {
		nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: fleet.RealHostLabel + "=true"})
		if err != nil {
			t.Fatal(err)
		}
		if len(nodes.Items) != 8 {
			t.Fatalf("%d real nodes, want 8", len(nodes.Items))
		}
		for _, n := range nodes.Items {
			info := n.Status.NodeInfo
			if !ready(n) || !strings.HasPrefix(info.ContainerRuntimeVersion, "containerd://2.") || info.KubeletVersion != versions.Kubernetes {
				t.Errorf("%s: ready %v, runtime %s, kubelet %s; want Ready, containerd 2.x, %s", n.Name, ready(n), info.ContainerRuntimeVersion, info.KubeletVersion, versions.Kubernetes)
			}
			chips := n.Status.Allocatable[gke.TPUResource]
			if n.Labels[gke.AcceleratorLabel] != "" && (chips.Value() != 4 || !hasTPUTaint(n)) {
				t.Errorf("%s: %s chips and taints %v; want 4 and the TPU taint", n.Name, chips.String(), n.Spec.Taints)
			}
		}
	})
	t.Run("status shows the real hosts", func(t *testing.T) {
		out := c.MustRun("status")
		n := 0
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) == 5 && f[1] == "Ready" && f[2] == "running" && f[3] == "running" {
				n++
			}
		}
		if n != 8 || !strings.Contains(out, "cluster DNS 10.") || !strings.Contains(out, "image registry 127.0.0.1:") {
			t.Errorf("status shows %d real hosts Ready with kubelet and containerd running, want 8, and the DNS and registry:\n%s", n, out)
		}
	})
	t.Run("idle cost", func(t *testing.T) { logIdleCost(t, c) })
	t.Run("manager in the cluster", func(t *testing.T) { checkInClusterManager(t, ctx, c) })
	t.Run("dns and connect", func(t *testing.T) { checkDNSAndConnect(t, ctx, c) })

	var firstIDs []string
	t.Run("tpu jobset on real slices", func(t *testing.T) {
		for _, file := range realExamples[:2] {
			commands, _ := exampleCommands(t, filepath.Join(root, file))
			runKubectlLines(t, c, root, commands)
		}
		pods := waitDistinctPools(t, c, "real-tpu-job", 0, 4, 90*time.Second)
		for _, p := range pods {
			if !strings.HasPrefix(p.Spec.NodeName, "gke-real-group-") {
				t.Errorf("pod %s runs on %s, not a real host", p.Name, p.Spec.NodeName)
			}
			firstIDs = append(firstIDs, p.Status.ContainerStatuses[0].ContainerID)
		}
		// Every worker read the injected environment and resolved every
		// worker of its slice through the cluster DNS.
		framework.Eventually(t, 60*time.Second, func(context.Context) (bool, string) {
			out, _ := c.Run("logs", "real-tpu-job")
			for slice := range 2 {
				for worker := range 2 {
					prefix := fmt.Sprintf("[slice-%d/worker-%d attempt-0] ", slice, worker)
					if !strings.Contains(out, prefix+fmt.Sprintf("worker %d of slice %d (of 2)", worker, slice)) ||
						strings.Count(out, prefix+"resolved real-tpu-job-slice-") != 2 {
						return false, "multislice logs real-tpu-job:\n" + out
					}
				}
			}
			return true, ""
		})
	})
	if t.Failed() {
		return
	}

	t.Run("restart all recreates real containers", func(t *testing.T) {
		pods := waitDistinctPools(t, c, "real-tpu-job", 0, 4, 90*time.Second)
		began := time.Now()
		if out, err := kubectl(c, "exec", pods[0].Name, "--", "touch", "/tmp/fail"); err != nil {
			t.Fatalf("kubectl exec: %v\n%s", err, out)
		}
		for _, p := range waitDistinctPools(t, c, "real-tpu-job", 1, 4, 90*time.Second) {
			if id := p.Status.ContainerStatuses[0].ContainerID; id == "" || slices.Contains(firstIDs, id) {
				t.Errorf("pod %s of attempt 1 runs container %q, not a new one", p.Name, id)
			}
		}
		t.Logf("a worker's exit 3 to every worker Running again in new containers: %s", time.Since(began).Round(100*time.Millisecond))
	})

	t.Run("seed on simulated pools across leader changes", func(t *testing.T) { checkLeaderChanges(t, ctx, c) })
	t.Run("trainer resumes from its checkpoint through every fault", func(t *testing.T) {
		if out, err := kubectl(c, "delete", "jobset", "real-tpu-job", "--wait=true"); err != nil {
			t.Fatalf("delete real-tpu-job: %v\n%s", err, out)
		}
		checkTrainer(t, c, root)
	})

	t.Run("down leaves nothing behind", func(t *testing.T) {
		l := realhost.NewLayout(c.Home)
		bridge := "ms-" + l.ID
		if exec.Command("ip", "link", "show", "dev", bridge).Run() != nil {
			t.Errorf("bridge %s is not there while the cluster runs: is it named after the cluster any more?", bridge)
		}
		// A host process killed by hand: down cleans up after it too (its
		// shims and containers keep running without it).
		if err := syscall.Kill(c.Process("containerd-gke-system-0").PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		c.MustRun("down")
		if left := processesUnder(c.Home); len(left) > 0 {
			t.Errorf("processes left: %v", left)
		}
		if left := processesUnder(l.RunDir()); len(left) > 0 {
			t.Errorf("processes (shims, containers) left: %v", left)
		}
		mounts, _ := os.ReadFile("/proc/self/mountinfo")
		for _, line := range strings.Split(string(mounts), "\n") {
			if strings.Contains(line, c.Home) || strings.Contains(line, l.RunDir()) {
				t.Errorf("mount left: %s", line)
			}
		}
		for _, h := range []string{"pids", "memory", "cpu", "cpuset", "systemd"} {
			if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", h, l.CgroupParent())); err == nil {
				t.Errorf("cgroup left: /sys/fs/cgroup/%s%s", h, l.CgroupParent())
			}
		}
		if exec.Command("ip", "link", "show", "dev", bridge).Run() == nil {
			t.Errorf("bridge %s left", bridge)
		}
		for _, dir := range []string{l.RunDir(), l.HostsDir()} {
			if _, err := os.Stat(dir); err == nil {
				t.Errorf("%s left", dir)
			}
		}
		links, _ := os.ReadDir("/var/log/containers")
		for _, e := range links {
			if target, _ := os.Readlink(filepath.Join("/var/log/containers", e.Name())); strings.HasPrefix(target, c.Home) {
				t.Errorf("log link left: %s -> %s", e.Name(), target)
			}
		}
		if after := kubeRules(); after != rulesBefore {
			t.Errorf("iptables rules of Kubernetes before up:\n%s\nafter down:\n%s", rulesBefore, after)
		}
		if after := readSysctls(); !maps.Equal(before, after) {
			t.Errorf("sysctls before up %v, after down %v", before, after)
		}
	})
}

// managerPods are the in-cluster manager's pods, waiting until want are
// Ready.
func managerPods(t *testing.T, c *framework.Cluster, want int) []corev1.Pod {
	t.Helper()
	var ready []corev1.Pod
	framework.Eventually(t, 90*time.Second, func(ctx context.Context) (bool, string) {
		pods, err := c.Client.CoreV1().Pods(install.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=manager"})
		if err != nil {
			return false, err.Error()
		}
		ready = ready[:0]
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && hasCondition(p, corev1.PodReady) {
				ready = append(ready, p)
			}
		}
		return len(ready) == want, fmt.Sprintf("%d of %d manager pods Ready", len(ready), want)
	})
	return ready
}

// checkInClusterManager: both replicas Ready on real hosts from the image
// up pushed; the TPU webhook reached through its Service (the JobSets of
// this test are admitted through it); metrics over HTTPS with a token.
func checkInClusterManager(t *testing.T, ctx context.Context, c *framework.Cluster) {
	pods := managerPods(t, c, 2)
	for _, p := range pods {
		node, err := c.Client.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if node.Labels[fleet.RealHostLabel] != "true" || p.Spec.Containers[0].Image != "ghcr.io/multislice/multislice:"+versions.Multislice {
			t.Errorf("manager pod %s on %s (real %q) runs %s; want a real host and the pushed image", p.Name, p.Spec.NodeName, node.Labels[fleet.RealHostLabel], p.Spec.Containers[0].Image)
		}
	}
	// A scraper's ServiceAccount bound to the shipped metrics-reader role.
	kubectl := requireKubectl(t)
	for _, args := range [][]string{
		{"create", "serviceaccount", "scraper"},
		{"create", "clusterrolebinding", "scraper", "--clusterrole=multislice-metrics-reader", "--serviceaccount=default:scraper"},
	} {
		if out, err := kubectl(c, args...); err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
	}
	token, err := kubectl(c, "create", "token", "scraper")
	if err != nil {
		t.Fatal(err)
	}
	url := "https://" + net.JoinHostPort(pods[0].Status.PodIP, "8443") + "/metrics"
	insecure := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // the manager's self-signed serving cert
	get := func(bearer string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := insecure.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	framework.Eventually(t, 30*time.Second, func(context.Context) (bool, string) {
		code, body := get(strings.TrimSpace(token))
		return code == http.StatusOK && strings.Contains(body, "go_goroutines"), fmt.Sprintf("GET %s with a token: %d", url, code)
	})
	if code, _ := get(""); code != http.StatusUnauthorized && code != http.StatusForbidden {
		t.Errorf("GET %s without a token: %d, want 401 or 403", url, code)
	}
}

// checkLeaderChanges runs the seed on its simulated pools, then three times
// deletes the leader's pod and times until the other holds the lease; a
// pod failure after each change restarts the seed.
func checkLeaderChanges(t *testing.T, ctx context.Context, c *framework.Cluster) {
	js := seedCopy(t, "multislice-job", "")
	js.Spec.FailurePolicy.MaxRestarts = 10
	if err := c.Objects.Create(ctx, js); err != nil {
		t.Fatal(err)
	}
	runningOnDistinctPools(t, c, "multislice-job", 0)
	leases := c.Client.CoordinationV1().Leases(install.Namespace)
	holder := func() string {
		l, err := leases.Get(ctx, "multislice-manager.multislice.dev", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		pod, _, _ := strings.Cut(*l.Spec.HolderIdentity, "_")
		return pod
	}
	var took []time.Duration
	for attempt := 1; attempt <= 3; attempt++ {
		managerPods(t, c, 2)
		leader := holder()
		began := time.Now()
		if err := c.Client.CoreV1().Pods(install.Namespace).Delete(ctx, leader, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete the leader %q: %v", leader, err)
		}
		framework.Eventually(t, 60*time.Second, func(context.Context) (bool, string) {
			h := holder()
			return h != "" && h != leader, fmt.Sprintf("lease held by %q (deleted: %s)", h, leader)
		})
		took = append(took, time.Since(began))
		pods := runningOnDistinctPools(t, c, "multislice-job", attempt-1)
		if err := c.Client.CoreV1().Pods("default").Delete(ctx, pods[0].Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		runningOnDistinctPools(t, c, "multislice-job", attempt)
	}
	sorted := slices.Clone(took)
	slices.Sort(sorted)
	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf("leader pod deleted to the other replica holding the lease: median %s (%s-%s), N=%d; load %s",
		sorted[1].Round(10*time.Millisecond), sorted[0].Round(10*time.Millisecond), sorted[2].Round(10*time.Millisecond), len(took), strings.TrimSpace(string(load)))
	if err := c.Objects.Delete(ctx, js); err != nil {
		t.Error(err)
	}
}

// checkDNSAndConnect: a web server on one real host, behind a headless
// Service, is found by name and answers a client on another; a pod reaches
// the API server through the kubernetes Service.
func checkDNSAndConnect(t *testing.T, ctx context.Context, c *framework.Cluster) {
	objs := `apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  clusterIP: None
  selector: {app: web}
  ports: [{name: http, port: 8080}]
---
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  hostname: web-0
  subdomain: web
  nodeName: gke-system-0
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: busybox
    command: [sh, -c, 'mkdir /www && echo "hello from $(hostname)" > /www/index.html && exec httpd -f -p 8080 -h /www']
---
apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  nodeName: gke-system-1
  restartPolicy: OnFailure
  containers:
  - name: client
    image: busybox
    command: [sh, -c, 'wget -qO- http://web-0.web:8080/']
---
apiVersion: v1
kind: Pod
metadata: {name: api-client}
spec:
  nodeName: gke-system-1
  restartPolicy: OnFailure
  containers:
  - name: client
    image: busybox
    # The kubernetes Service's ClusterIP (kube-proxy) to the API server
    # (the relay on the pod network): plain HTTP gets TLS's "400 Bad Request".
    command: [sh, -c, 'printf "GET / HTTP/1.0\r\n\r\n" | nc -w 5 kubernetes.default.svc 443 | head -c 12 | grep -q "HTTP/1.0 400" && echo reached the API server']
`
	path := filepath.Join(t.TempDir(), "web.yaml")
	if err := os.WriteFile(path, []byte(objs), 0o644); err != nil {
		t.Fatal(err)
	}
	kubectl := requireKubectl(t)
	if out, err := kubectl(c, "apply", "-f", path); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	defer func() { _, _ = kubectl(c, "delete", "-f", path, "--wait=true", "--timeout=60s") }()
	for pod, want := range map[string]string{"client": "hello from web-0", "api-client": "reached the API server"} {
		framework.Eventually(t, 90*time.Second, func(ctx context.Context) (bool, string) {
			p, err := c.Client.CoreV1().Pods("default").Get(ctx, pod, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return p.Status.Phase == corev1.PodSucceeded, fmt.Sprintf("pod %s %s", pod, p.Status.Phase)
		})
		if out, err := kubectl(c, "logs", pod); err != nil || strings.TrimSpace(out) != want {
			t.Errorf("kubectl logs %s: %v %q, want %q", pod, err, out, want)
		}
	}
}

// logIdleCost logs the CPU and memory of each real host (its kubelet and
// containerd) while nothing runs on it.
func logIdleCost(t *testing.T, c *framework.Cluster) {
	const window = 10 * time.Second
	type host struct {
		name           string
		pids           []int
		ticks0, ticks1 int64
	}
	var hosts []*host
	for _, n := range []string{"gke-system-0", "gke-system-1", "gke-real-group-np-0-0", "gke-real-group-np-0-1"} {
		hosts = append(hosts, &host{name: n, pids: []int{c.Process("kubelet-" + n).PID, c.Process("containerd-" + n).PID}})
	}
	for _, h := range hosts {
		h.ticks0 = cpuTicks(h.pids)
	}
	time.Sleep(window)
	var cpu []float64
	var rss []int64
	for _, h := range hosts {
		h.ticks1 = cpuTicks(h.pids)
		cpu = append(cpu, float64(h.ticks1-h.ticks0)/100/window.Seconds()*100)
		rss = append(rss, rssMiB(h.pids))
	}
	sort.Float64s(cpu)
	slices.Sort(rss)
	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf("idle real host (kubelet + containerd), N=%d over %s: CPU median %.1f%% of a core (%.1f-%.1f), RSS median %d MiB (%d-%d); load %s",
		len(hosts), window, cpu[len(cpu)/2], cpu[0], cpu[len(cpu)-1], rss[len(rss)/2], rss[0], rss[len(rss)-1], strings.TrimSpace(string(load)))
}

// cpuTicks is the user and system time of the processes, in clock ticks.
func cpuTicks(pids []int) int64 {
	var total int64
	for _, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(data)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		u, _ := strconv.ParseInt(f[11], 10, 64)
		k, _ := strconv.ParseInt(f[12], 10, 64)
		total += u + k
	}
	return total
}

func rssMiB(pids []int) int64 {
	var kb int64
	for _, pid := range pids {
		data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				kb += n
			}
		}
	}
	return kb / 1024
}

// kubeRules are the iptables and ip6tables lines naming KUBE- chains.
func kubeRules() string {
	var lines []string
	for _, save := range []string{"iptables-save", "ip6tables-save"} {
		out, _ := exec.Command(save).Output()
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, "KUBE-") {
				lines = append(lines, line)
			}
		}
	}
	return strings.Join(lines, "\n")
}

// readSysctls reads the settings real hosts change.
func readSysctls() map[string]string {
	out := map[string]string{}
	for _, key := range realhost.Changed {
		if v, err := os.ReadFile(filepath.Join("/proc/sys", key)); err == nil {
			out[key] = strings.TrimSpace(string(v))
		}
	}
	return out
}
