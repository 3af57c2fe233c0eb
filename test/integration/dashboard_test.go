package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/multislice/multislice/internal/manager"
	"github.com/multislice/multislice/internal/testobj"
	"github.com/multislice/multislice/test/framework"
)

// TestManagerServesDashboard: with --dashboard-bind-address the manager
// serves the dashboard; the page shows a JobSet created after it started.
func TestManagerServesDashboard(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", framework.FreePorts(t, 1)[0])
	env := framework.StartEnvWith(t, func(o *manager.Options) { o.DashboardAddr = addr })
	ns := env.Namespace(t)
	create(t, env, testobj.NewJobSet(ns, "shown").ReplicatedJob("w", 2, 1).Obj())
	framework.Eventually(t, wait, func(context.Context) (bool, string) {
		var page struct {
			Workloads []struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"workloads"`
		}
		body, err := get("http://" + addr + "/api/page")
		if err != nil {
			return false, err.Error()
		}
		if err := json.Unmarshal([]byte(body), &page); err != nil {
			return false, err.Error()
		}
		for _, w := range page.Workloads {
			if w.Namespace == ns && w.Name == "shown" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("JobSet %s/shown not on the page: %+v", ns, page.Workloads)
	})
	html, err := get("http://" + addr + "/")
	if err != nil || !strings.Contains(html, "shown") {
		t.Fatalf("GET / (%v):\n%.500s", err, html)
	}
}

// TestDashboardFailureLeavesTheManagerRunning: a dashboard that cannot
// bind its address logs why and ends alone; the controllers keep working.
func TestDashboardFailureLeavesTheManagerRunning(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	env := framework.StartEnvWith(t, func(o *manager.Options) { o.DashboardAddr = taken.Addr().String() })
	time.Sleep(time.Second) // the dashboard has failed by now
	ns := env.Namespace(t)
	create(t, env, testobj.NewJobSet(ns, "js").ReplicatedJob("w", 2, 1).Obj())
	waitJobs(t, env, ns, "js", 2)
}

func get(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return string(body), fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(body), err
}
