package localcluster

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/multislice/multislice/internal/localcluster/sim"
)

// Every component of the local cluster listens on the loopback only, on
// the ports picked for it.
func TestComponentsListenOnLoopbackOnly(t *testing.T) {
	h := Home(t.TempDir())
	p := ports{APIServer: 6443, EtcdClient: 2379, EtcdPeer: 2380, Scheduler: 10259, ControllerManager: 10257, Kwok: 10247, Egress: 8132}
	addressFlags := []string{"--bind-address=", "--advertise-address=", "--listen-client-urls=", "--listen-peer-urls=",
		"--advertise-client-urls=", "--initial-advertise-peer-urls=", "--server-address=", "--etcd-servers="}
	for name, c := range map[string]struct {
		args []string
		port int
	}{
		"etcd":                    {h.etcdArgs(p), p.EtcdClient},
		"kube-apiserver":          {h.apiServerArgs(p), p.APIServer},
		"kube-controller-manager": {h.controllerManagerArgs(p, sim.KubeletLease), p.ControllerManager},
		"kube-scheduler":          {h.schedulerArgs(p), p.Scheduler},
		"kwok":                    {h.kwokArgs(p), p.Kwok},
	} {
		seen := 0
		for _, a := range c.args {
			for _, f := range addressFlags {
				if v, ok := strings.CutPrefix(a, f); ok {
					seen++
					if !strings.Contains(v, "127.0.0.1") || strings.Contains(v, "0.0.0.0") {
						t.Errorf("%s: %s is not the loopback", name, a)
					}
				}
			}
		}
		if seen == 0 {
			t.Errorf("%s: no address flag in %v", name, c.args)
		}
		if !strings.Contains(strings.Join(c.args, " "), strconv.Itoa(c.port)) {
			t.Errorf("%s: its port %d is not in %v", name, c.port, c.args)
		}
		for _, a := range c.args {
			if i := strings.Index(a, string(h)); i >= 0 && !strings.HasPrefix(a[i:], string(h)+"/") {
				t.Errorf("%s: %s names a path outside $MULTISLICE_HOME", name, a)
			}
		}
	}
}

func TestHomeState(t *testing.T) {
	h := Home(t.TempDir())
	if s, err := h.ReadState(); s != nil || err != nil {
		t.Fatalf("no cluster yet: state %v, error %v", s, err)
	}
	want := &State{APIServer: "https://127.0.0.1:6443", Processes: []Process{{Name: "etcd", PID: 42, Binary: "/bin/etcd"}}}
	if err := h.writeState(want); err != nil {
		t.Fatal(err)
	}
	got, err := h.ReadState()
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("read back %+v (%v), want %+v", got, err, want)
	}
	if err := os.WriteFile(h.statePath(), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ReadState(); err == nil {
		t.Fatal("a damaged state.json read without an error")
	}
}

func TestDefaultHome(t *testing.T) {
	t.Setenv("MULTISLICE_HOME", "relative/home")
	h, err := DefaultHome()
	wd, _ := os.Getwd()
	if err != nil || string(h) != filepath.Join(wd, "relative/home") {
		t.Fatalf("MULTISLICE_HOME=relative/home: %q, %v", h, err)
	}
	if h.Kubeconfig() != filepath.Join(string(h), "kubeconfig") || h.Log("etcd") != filepath.Join(string(h), "logs", "etcd.log") {
		t.Errorf("kubeconfig %s, log %s", h.Kubeconfig(), h.Log("etcd"))
	}
	t.Setenv("MULTISLICE_HOME", "")
	t.Setenv("HOME", "/home/someone")
	if h, err := DefaultHome(); err != nil || string(h) != "/home/someone/.multislice" {
		t.Fatalf("default: %q, %v", h, err)
	}
}
