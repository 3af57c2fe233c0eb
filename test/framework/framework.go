// Package framework is what the integration and end-to-end suites and the
// benchmark programs share: running the multislice binary against a
// cluster in a temporary $MULTISLICE_HOME, clients for it, the CPU and
// memory its components use, and polling helpers.
package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/multislice/multislice/internal/objcache"
)

// BinDir is where make puts multislice and the control-plane binaries.
func BinDir(t testing.TB) string {
	if d := os.Getenv("MULTISLICE_BIN_DIR"); d != "" {
		return d
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "bin")
}

// repoRoot is the directory of go.mod, above the working directory.
func repoRoot() (string, error) {
	wd, _ := os.Getwd()
	for dir := wd; dir != "/"; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
	}
	return "", errors.New("cannot find the repository root (no go.mod above " + wd + ")")
}

// RequireE2E skips unless the suite was asked for (make test sets
// MULTISLICE_E2E=1), and then fails, not skips, when a binary is missing.
func RequireE2E(t testing.TB) {
	if os.Getenv("MULTISLICE_E2E") != "1" {
		t.Skip("end-to-end test: run `make test-e2e` (it builds what it needs)")
	}
	if _, err := os.Stat(filepath.Join(BinDir(t), "multislice")); err != nil {
		t.Fatalf("bin/multislice is missing: run `make build` (%v)", err)
	}
}

// Cluster is a local cluster started by a test (StartCluster) or a
// benchmark program (Up).
type Cluster struct {
	// Home is its $MULTISLICE_HOME, Bin the directory of the binaries.
	Home, Bin string
	Config    *rest.Config
	Client    kubernetes.Interface
	// Objects is a controller-runtime client that also knows JobSets.
	Objects client.Client
	// Env is added to every multislice invocation (e.g. MULTISLICE_MANAGER_ARGS=...).
	Env []string
	// Audit, when set, is the API server's audit log (its Env was in Env
	// at up).
	Audit *Audit
	t     testing.TB // nil for a program's cluster
	// stopSignals ends a program's cluster's downOnSignal (nil for a test's);
	// downMu is held while the cluster goes down.
	stopSignals func()
	downMu      sync.Mutex
}

// Run runs `multislice args...` against the cluster's home and returns its
// combined output.
func (c *Cluster) Run(args ...string) (string, error) {
	return run(c.Bin, c.Home, c.Env, args...)
}

// MustRun is Run that fails the test on error.
func (c *Cluster) MustRun(args ...string) string {
	c.t.Helper()
	out, err := c.Run(args...)
	if err != nil {
		c.t.Fatalf("multislice %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// RunIn runs multislice with MULTISLICE_HOME=home.
func RunIn(t testing.TB, home string, args ...string) (string, error) {
	return run(BinDir(t), home, nil, args...)
}

func run(bin, home string, env []string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(bin, "multislice"), args...)
	cmd.Env = append(append(os.Environ(), "MULTISLICE_HOME="+home, "MULTISLICE_BIN_DIR="+bin), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// StartCluster runs `multislice up` in a fresh home (extra args, e.g.
// --fleet, are passed on) and registers `down` as cleanup.
func StartCluster(t testing.TB, args ...string) (*Cluster, string) {
	t.Helper()
	return StartClusterWithEnv(t, nil, args...)
}

// StartClusterWithEnv is StartCluster with env added to every multislice
// invocation (e.g. MULTISLICE_MANAGER_ARGS=...): a test that runs beside
// others cannot set the process's own environment.
func StartClusterWithEnv(t testing.TB, env []string, args ...string) (*Cluster, string) {
	t.Helper()
	home := t.TempDir()
	c := &Cluster{Home: home, Bin: BinDir(t), Env: env, t: t}
	t.Cleanup(func() {
		if out, err := c.Run("down"); err != nil {
			t.Errorf("multislice down: %v\n%s", err, out)
		}
	})
	c.keepOnFailure()
	out := c.MustRun(append([]string{"up"}, args...)...)
	if err := c.connect(200, 400); err != nil {
		t.Fatal(err)
	}
	return c, out
}

// connect makes the cluster's clients from its kubeconfig.
func (c *Cluster) connect(qps float32, burst int) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(c.Home, "kubeconfig"))
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = qps, burst
	log.SetLogger(logr.Discard()) // controller-runtime's client would warn that no logger is set
	c.Config = cfg
	if c.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	c.Objects, err = client.New(cfg, client.Options{Scheme: objcache.Scheme()})
	return err
}

// FleetFile writes a fleet config with the given multislice groups (one
// YAML flow mapping each, e.g. "{name: g1, accelerator: tpu-v4-podslice,
// topology: 2x2x2, slices: 4}") plus a one-node CPU pool, and returns its path.
func FleetFile(t testing.TB, groups ...string) string {
	var b strings.Builder
	b.WriteString("apiVersion: multislice.dev/v1alpha1\nkind: Fleet\ngroups:\n")
	for _, g := range groups {
		b.WriteString("- " + g + "\n")
	}
	b.WriteString("pools:\n- {name: default-pool, machineType: e2-standard-8, numNodes: 1}\n")
	path := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Eventually polls check until it reports done, failing the test with the
// last explanation after timeout.
func Eventually(t testing.TB, timeout time.Duration, check func(ctx context.Context) (bool, string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var why string
	for {
		var done bool
		done, why = check(ctx)
		if done {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("not done after %s: %s", timeout, why)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Process is one component of the cluster as state.json records it.
type Process struct {
	Name  string `json:"name"`
	PID   int    `json:"pid"`
	Ports []int  `json:"ports"`
}

// Process reads the cluster's state.json for the component called name.
func (c *Cluster) Process(name string) Process {
	c.t.Helper()
	data, err := os.ReadFile(filepath.Join(c.Home, "state.json"))
	if err != nil {
		c.t.Fatal(err)
	}
	var st struct {
		Processes []Process `json:"processes"`
	}
	if err := json.Unmarshal(data, &st); err != nil {
		c.t.Fatal(err)
	}
	for _, p := range st.Processes {
		if p.Name == name {
			return p
		}
	}
	c.t.Fatalf("no %s in %s/state.json", name, c.Home)
	return Process{}
}

// WriteKubeconfig writes a kubeconfig for the API server at host (trusting
// ca) with the given credentials, and returns its path.
func WriteKubeconfig(t testing.TB, host string, ca []byte, auth *clientcmdapi.AuthInfo) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: host, CertificateAuthorityData: ca}
	kc.AuthInfos["u"] = auth
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}
