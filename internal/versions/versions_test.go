package versions

import (
	"os"
	"strings"
	"testing"
)

// The tools modules pin the same versions as versions.env, so that the
// cached binaries are named after what they really are.
func TestToolsModulesAgree(t *testing.T) {
	cases := map[string]string{
		"../../tools/controlplane/go.mod": "k8s.io/kubernetes " + Kubernetes,
		"../../tools/etcd/go.mod":         "go.etcd.io/etcd/server/v3 " + Etcd,
		"../../tools/coredns/go.mod":      "github.com/coredns/coredns " + CoreDNS,
	}
	for path, want := range cases {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), want) {
			t.Errorf("%s does not require %q: update it or versions.env", path, want)
		}
	}
	minor := strings.Split(Kubernetes, ".")[1]
	data, _ := os.ReadFile("../../tools/controlplane/go.mod")
	if !strings.Contains(string(data), "k8s.io/api => k8s.io/api v0."+minor+".") {
		t.Errorf("tools/controlplane/go.mod must replace the staging modules with v0.%s.x releases", minor)
	}
}
