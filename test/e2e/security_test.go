package e2e

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"testing"
	"time"

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
