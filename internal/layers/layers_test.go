package layers

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/multislice/multislice/"

// TestNoImportGoesUp lists every package of the module with its imports
// (and its tests' imports) and fails on one that reaches a higher layer,
// or on a package no layer claims.
func TestNoImportGoesUp(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}}`, module+"...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	lines := bufio.NewScanner(bytes.NewReader(out))
	seen := 0
	for lines.Scan() {
		seen++
		fields := strings.Fields(lines.Text())
		pkg := strings.TrimPrefix(fields[0], module)
		from := Of(pkg)
		if from < 0 {
			t.Errorf("%s belongs to no layer: add it to layers.Layers and docs/architecture.md", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			dep, ours := strings.CutPrefix(imp, module)
			if !ours || dep == pkg {
				continue
			}
			if to := Of(dep); to > from {
				t.Errorf("%s (%s) imports %s (%s): a layer may import only its own and those below",
					pkg, Layers[from].Name, dep, Layers[to].Name)
			}
		}
	}
	if seen < 20 {
		t.Fatalf("go list named only %d packages", seen)
	}
}

func TestOf(t *testing.T) {
	for pkg, want := range map[string]string{
		"api/jobset/v1alpha2":          "api",
		"internal/gke":                 "facts",
		"internal/webhook/tpu":         "decisions",
		"internal/manager":             "manager",
		"internal/sim/localcluster":    "simulator",
		"internal/cli/up":              "commands",
		"internal/simulator-lookalike": "",
	} {
		got := ""
		if i := Of(pkg); i >= 0 {
			got = Layers[i].Name
		}
		if got != want {
			t.Errorf("Of(%s) = %q, want %q", pkg, got, want)
		}
	}
}

// TestClientCommandsDoNotNeedTheSimulator: the CLI's factory and the
// commands that talk to any cluster (the manager, logs, workload) build
// without the simulated fleet; only the local-cluster commands import it.
func TestClientCommandsDoNotNeedTheSimulator(t *testing.T) {
	pkgs := []string{"internal/cli", "internal/cli/manager", "internal/cli/logs", "internal/cli/workload"}
	args := []string{"list", "-deps"}
	for _, p := range pkgs {
		args = append(args, module+p)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, module+"internal/sim") {
			t.Errorf("%v depend on %s: read the home through internal/home, not the simulator", pkgs, dep)
		}
	}
}
