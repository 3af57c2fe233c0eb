package versions

import (
	"os"
	"strings"
	"testing"
)

// The tools modules pin the same versions as versions.env, so that the
// cached binaries are named after what they really are.
func TestToolsModulesAgree(t *testing.T) {
	cases := []struct{ path, want string }{
		{"../../tools/controlplane/go.mod", "k8s.io/kubernetes " + Kubernetes},
		{"../../tools/controlplane/go.mod", "sigs.k8s.io/kwok " + Kwok},
		{"../../tools/etcd/go.mod", "go.etcd.io/etcd/server/v3 " + Etcd},
		{"../../tools/coredns/go.mod", "github.com/coredns/coredns " + CoreDNS},
	}
	for _, c := range cases {
		data, err := os.ReadFile(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), c.want) {
			t.Errorf("%s does not require %q: update it or versions.env", c.path, c.want)
		}
	}
	minor := strings.Split(Kubernetes, ".")[1]
	data, _ := os.ReadFile("../../tools/controlplane/go.mod")
	if !strings.Contains(string(data), "k8s.io/api => k8s.io/api v0."+minor+".") {
		t.Errorf("tools/controlplane/go.mod must replace the staging modules with v0.%s.x releases", minor)
	}
}

// The control plane and the main module select the same version of every
// module both use, so the packages they share (client-go, apimachinery,
// x/sys, ...) are compiled once on a fresh machine (hack/build-controlplane.sh).
func TestControlPlaneSharesMainVersions(t *testing.T) {
	main, cp := requirements(t, "../../go.mod"), requirements(t, "../../tools/controlplane/go.mod")
	common := 0
	for mod, v := range main {
		w, ok := cp[mod]
		if ok {
			common++
		}
		if ok && w != v {
			t.Errorf("%s: go.mod has %s, tools/controlplane/go.mod %s: make them agree (go get %s@<the higher> in the other)", mod, v, w, mod)
		}
	}
	if common < 30 {
		t.Errorf("only %d modules in common: the go.mod parser is broken", common)
	}
}

// requirements maps each module a go.mod requires to its version, a
// replacement's version winning.
func requirements(t *testing.T, path string) map[string]string {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	replaced := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "require"))
		line, _, _ = strings.Cut(line, "//")
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(line, "replace")), "("))
		switch {
		case len(f) == 4 && f[1] == "=>":
			out[f[0]], replaced[f[0]] = f[3], true
		case len(f) == 2 && strings.HasPrefix(f[1], "v") && !replaced[f[0]]:
			out[f[0]] = f[1]
		}
	}
	return out
}
