// Package layers writes down the layers of the code (docs/architecture.md)
// as data; its tests fail on an import that goes up a layer, on a decision
// that is not pure, on a command that imports another, and on a stale
// package table in docs/architecture.md.
package layers

import "strings"

// Layers, lowest first: a package may import its own layer and those
// below, never one above. The local cluster (its simulated fleet and real
// hosts) sits above the manager, so nothing the manager runs can depend
// on it.
var Layers = []struct {
	Name     string
	Packages []string // import-path prefixes, relative to the module
}{
	{"api", []string{"api/", "config/"}},
	{"foundations", []string{"internal/gke", "internal/tpu", "internal/naming", "internal/features", "internal/metrics",
		"internal/pki", "internal/outage", "internal/cmdline", "internal/versions", "internal/layers", "internal/testobj", "internal/podtemplate",
		"internal/home", "internal/nodelabels"}},
	{"components", []string{"internal/placement", "internal/slicing", "internal/slicehealth", "internal/view", "internal/webhook/", "internal/controller/",
		"internal/certs", "internal/tpujob", "internal/workload", "internal/agent", "internal/standin", "internal/objcache", "internal/podgroups"}},
	{"install", []string{"internal/install", "internal/release", "internal/image", "internal/kueue"}},
	{"manager", []string{"internal/manager", "internal/dashboard"}},
	{"local cluster", []string{"internal/localcluster"}},
	{"commands", []string{"internal/cli", "cmd/", "hack/", "bench/", "test/", "examples/"}},
}

// Of is the index of the layer a package (path relative to the module)
// belongs to, -1 if none claims it.
func Of(pkg string) int {
	for i, l := range Layers {
		for _, p := range l.Packages {
			if pkg == strings.TrimSuffix(p, "/") || strings.HasPrefix(pkg, strings.TrimSuffix(p, "/")+"/") {
				return i
			}
		}
	}
	return -1
}
