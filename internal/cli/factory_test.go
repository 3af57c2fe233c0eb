package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
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
			f := parsed(t, dir, "--kubeconfig", kubeconfig, "--context", tc.context)
			if got := f.Namespace(tc.flagNS); got != tc.wantNS {
				t.Errorf("namespace %q, want %q", got, tc.wantNS)
			}
			cfg, err := f.WorkloadConfig()
			if err != nil || cfg.Host != tc.wantHost {
				t.Errorf("cluster %v (%v), want %s", cfg, err, tc.wantHost)
			}
		})
	}
	f := parsed(t, dir, "--kubeconfig", kubeconfig, "--as", "alice")
	if cfg, err := f.WorkloadConfig(); err != nil || cfg.Impersonate.UserName != "alice" {
		t.Errorf("--as alice: impersonating %+v (%v)", cfg, err)
	}
	// kubectl's --server, --token and --certificate-authority, with no
	// kubeconfig at all.
	ca := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(ca, []byte("not read until a request"), 0o600); err != nil {
		t.Fatal(err)
	}
	f = parsed(t, filepath.Join(dir, "no-cluster"), "--server", "https://127.0.0.1:9443", "--token", "abc", "--certificate-authority", ca)
	if cfg, err := f.WorkloadConfig(); err != nil || cfg.Host != "https://127.0.0.1:9443" || cfg.BearerToken != "abc" || cfg.CAFile != ca {
		t.Errorf("--server --token --certificate-authority: %+v (%v)", cfg, err)
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

// parsed is a Factory whose client flags were given args.
func parsed(t *testing.T, home string, args ...string) *Factory {
	t.Helper()
	f := &Factory{HomeDir: home}
	fl := pflag.NewFlagSet("multislice", pflag.ContinueOnError)
	f.BindClientFlags(fl)
	if err := fl.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f
}
