package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/multislice/multislice/internal/testobj"
	"github.com/multislice/multislice/test/framework"
)

// TestLockedDown: the local cluster's etcd answers only TLS clients with a
// certificate of the cluster's CA, so nobody else on the machine reads its
// Secrets; the cluster works through the apiserver as before; the manager
// and kwok hold only their own permissions, not cluster-admin.
func TestLockedDown(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	c, _ := framework.StartCluster(t)
	etcdPorts := c.Process("etcd").Ports
	if len(etcdPorts) == 0 {
		t.Fatal("etcd has no ports in state.json")
	}
	client := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for _, port := range etcdPorts {
		for _, scheme := range []string{"http", "https"} {
			url := fmt.Sprintf("%s://127.0.0.1:%d/v3/kv/range", scheme, port)
			resp, err := client.Post(url, "application/json", nil)
			if err == nil {
				resp.Body.Close()
				t.Errorf("%s answered %s without a client certificate", url, resp.Status)
			}
		}
	}
	if out := c.MustRun("nodepool", "list"); len(out) == 0 {
		t.Error("the cluster does not answer through the apiserver")
	}

	ctx := context.Background()
	as := func(identity string) kubernetes.Interface {
		cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(c.Home, "pki", identity+".kubeconfig"))
		if err != nil {
			t.Fatal(err)
		}
		return kubernetes.NewForConfigOrDie(cfg)
	}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	for _, identity := range []string{"manager", "kwok"} {
		cs := as(identity)
		if _, err := cs.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("%s lists kube-system's Secrets: %v, want forbidden", identity, err)
		}
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "escalate"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}}
		if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, dryRun); !apierrors.IsForbidden(err) {
			t.Errorf("%s creates a ClusterRole: %v, want forbidden", identity, err)
		}
	}
	if _, err := as("manager").BatchV1().Jobs("default").Create(ctx, testobj.NewJob("", "probe").PodSpec(corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}).Obj(), dryRun); err != nil {
		t.Errorf("the manager may not create a Job: %v", err)
	}
}

// TestControlPlaneOutage kills etcd, the API server, then both, in the
// middle of a restart of the seed JobSet: `multislice status` answers
// within 5 s naming what is down, `multislice up` restarts it, and the
// JobSet is back to 8 pods Running at the next attempt soon after.
//
// Soon: within 20 s (the goal is 15 s), or, on a machine too busy for that,
// within the time the same test took to start its cluster and the seed
// afresh (the floor, measured in the same run): recovery restarts six of
// the cluster's components and the JobSet. Idle, recovery takes 0.55x the
// floor (6 s against 10.6 s); in a make test with three clusters, the real
// hosts and the integration package beside it (load 20), it took 17-24 s.
func TestControlPlaneOutage(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	fresh := time.Now()
	c, _ := framework.StartCluster(t)
	ctx := context.Background()
	js := seedCopy(t, "outage", "")
	js.Spec.FailurePolicy.MaxRestarts = 10
	created := time.Now()
	if err := c.Objects.Create(ctx, js); err != nil {
		t.Fatal(err)
	}
	var floor time.Duration
	for attempt, down := range [][]string{{"etcd"}, {"kube-apiserver"}, {"etcd", "kube-apiserver"}} {
		pods := runningOnDistinctPools(t, c, "outage", attempt)
		if attempt == 0 {
			floor = time.Since(fresh)
			t.Logf("the floor: the cluster up and the seed's 8 pods Running in %s (up %s)", floor.Round(100*time.Millisecond), created.Sub(fresh).Round(100*time.Millisecond))
		}
		if err := c.Client.CoreV1().Pods("default").Delete(ctx, pods[0].Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond) // mid-restart
		for _, component := range down {
			if err := syscall.Kill(c.Process(component).PID, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(8 * time.Second) // the outage
		began := time.Now()
		out, err := c.Run("status")
		if took := time.Since(began); err == nil || took > 5*time.Second || !strings.Contains(out, "stopped: "+strings.Join(down, ", ")) {
			t.Errorf("status with %s down: %v after %s\n%s", down, err, took.Round(time.Millisecond), out)
		}
		upBegan := time.Now()
		c.MustRun("up") // returns once the API server answers
		back := time.Now()
		runningOnDistinctPools(t, c, "outage", attempt+1)
		took := time.Since(back)
		t.Logf("%s down 8 s mid-restart: `up` took %s; 8 pods Running at attempt %d %s after the API server answered again",
			strings.Join(down, "+"), back.Sub(upBegan).Round(100*time.Millisecond), attempt+1, took.Round(100*time.Millisecond))
		if took > max(20*time.Second, floor) {
			t.Errorf("%s: recovery took %s, above both 20 s and the floor of %s", down, took.Round(100*time.Millisecond), floor.Round(100*time.Millisecond))
		}
	}
}
