package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/multislice/multislice/test/framework"
)

// TestEtcdLockedDown: the local cluster's etcd answers only TLS clients
// with a certificate of the cluster's CA, so nobody else on the machine
// reads its Secrets; the cluster works through the apiserver as before.
func TestEtcdLockedDown(t *testing.T) {
	framework.RequireE2E(t)
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
}

// TestControlPlaneOutage kills etcd, then the API server, in the middle of
// a restart of the seed JobSet: `multislice status` answers within 5 s
// naming what is down, `multislice up` restarts it, and the JobSet is back
// to 8 pods Running at the next attempt.
func TestControlPlaneOutage(t *testing.T) {
	framework.RequireE2E(t)
	c, _ := framework.StartCluster(t)
	ctx := context.Background()
	js := seedCopy(t, "outage", "")
	if err := c.Objects.Create(ctx, js); err != nil {
		t.Fatal(err)
	}
	for attempt, component := range []string{"etcd", "kube-apiserver"} {
		pods := runningOnDistinctPools(t, c, "outage", attempt)
		if err := c.Client.CoreV1().Pods("default").Delete(ctx, pods[0].Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond) // mid-restart
		pid := c.Process(component).PID
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		time.Sleep(8 * time.Second) // the outage
		began := time.Now()
		out, err := c.Run("status")
		if took := time.Since(began); err == nil || took > 5*time.Second || !strings.Contains(out, "stopped: "+component) {
			t.Errorf("status with %s down: %v after %s\n%s", component, err, took.Round(time.Millisecond), out)
		}
		c.MustRun("up")
		back := time.Now()
		runningOnDistinctPools(t, c, "outage", attempt+1)
		t.Logf("%s down 8 s mid-restart: 8 pods Running at attempt %d %s after it was restarted", component, attempt+1, time.Since(back).Round(100*time.Millisecond))
	}
}
