package cli

import (
	"os"
	"path/filepath"
	"testing"
)

func TestClientFlags(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "config")
	body := `apiVersion: v1
kind: Config
clusters:
- {name: a, cluster: {server: "https://127.0.0.1:6443"}}
- {name: b, cluster: {server: "https://127.0.0.1:7443"}}
contexts:
- {name: a, context: {cluster: a, namespace: team-a}}
- {name: b, context: {cluster: b}}
current-context: a
`
	if err := os.WriteFile(kubeconfig, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", "")
	for _, tc := range []struct {
		name, context, flagNS, wantNS, wantHost string
	}{
		{"the current context and its namespace", "", "", "team-a", "https://127.0.0.1:6443"},
		{"-n wins", "", "mine", "mine", "https://127.0.0.1:6443"},
		{"--context b: its cluster, no namespace: default", "b", "", "default", "https://127.0.0.1:7443"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &Factory{HomeDir: dir, Kubeconfig: kubeconfig, Context: tc.context}
			if got := f.Namespace(tc.flagNS); got != tc.wantNS {
				t.Errorf("namespace %q, want %q", got, tc.wantNS)
			}
			cfg, err := f.WorkloadConfig()
			if err != nil || cfg.Host != tc.wantHost {
				t.Errorf("cluster %v (%v), want %s", cfg, err, tc.wantHost)
			}
		})
	}
	f := &Factory{HomeDir: dir, Kubeconfig: kubeconfig, As: "alice"}
	if cfg, err := f.WorkloadConfig(); err != nil || cfg.Impersonate.UserName != "alice" {
		t.Errorf("--as alice: impersonating %+v (%v)", cfg, err)
	}
	// Nothing named: the local cluster's kubeconfig, whose context has no
	// namespace.
	f = &Factory{HomeDir: filepath.Join(dir, "no-cluster")}
	if got := f.Namespace(""); got != "default" {
		t.Errorf("local cluster: namespace %q, want default", got)
	}
	if _, err := f.WorkloadConfig(); err == nil {
		t.Error("no local cluster and no kubeconfig: no error")
	}
	pipe, w, _ := os.Pipe()
	defer pipe.Close()
	defer w.Close()
	if IsTerminal(w) {
		t.Error("a pipe is a terminal")
	}
}
