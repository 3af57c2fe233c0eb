// Package versions holds the pinned versions of everything Multislice
// builds and runs, read from versions.env: the one place they live.
package versions

import (
	_ "embed"
	"strings"
)

// Multislice is this build's version, stamped by `make image`
// (-ldflags -X); "dev" otherwise.
var Multislice = "dev"

//go:embed versions.env
var env string

// Pinned versions, as in versions.env.
var (
	Kubernetes      = lookup("KUBERNETES_VERSION")
	Etcd            = lookup("ETCD_VERSION")
	Kwok            = lookup("KWOK_VERSION")
	ControllerTools = lookup("CONTROLLER_TOOLS_VERSION")
	Containerd      = lookup("CONTAINERD_VERSION")
	CNIPlugins      = lookup("CNI_PLUGINS_VERSION")
	CoreDNS         = lookup("COREDNS_VERSION")
	Kueue           = lookup("KUEUE_VERSION")
)

func lookup(key string) string {
	for _, line := range strings.Split(env, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && k == key {
			return v
		}
	}
	panic("versions.env has no " + key) // a build defect, caught by tests
}
