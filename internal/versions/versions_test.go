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

// The control plane selects the same version of every module that the main
// module or etcd's tools module also uses, so the packages they share
// (client-go, apimachinery, grpc, protobuf, x/sys, ...) are compiled once on a
// fresh machine (hack/build-controlplane.sh). etcd's own modules are the
// exception: the server is pinned at ETCD_VERSION, Kubernetes' client at its own.
func TestControlPlaneSharesVersions(t *testing.T) {
	cp := requirements(t, "../../tools/controlplane/go.mod")
	for _, c := range []struct {
		path      string
		own       string // a prefix of modules allowed to differ
		minCommon int    // fewer means the go.mod parser is broken
	}{
		{"../../go.mod", "", 30},
		{"../../tools/etcd/go.mod", "go.etcd.io/", 30},
	} {
		common := 0
		for mod, v := range requirements(t, c.path) {
			w, ok := cp[mod]
			if !ok || (c.own != "" && strings.HasPrefix(mod, c.own)) {
				continue
			}
			common++
			if w != v {
				t.Errorf("%s: %s has %s, tools/controlplane/go.mod %s: make them agree (go get %s@<the higher> in the other)", mod, c.path, v, w, mod)
			}
		}
		if common < c.minCommon {
			t.Errorf("%s: only %d modules in common with tools/controlplane/go.mod", c.path, common)
		}
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
