package layers

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
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
		"internal/gke":                 "foundations",
		"internal/webhook/tpu":         "components",
		"internal/manager":             "manager",
		"internal/localcluster/sim":    "local cluster",
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

// deps are the packages pkgs (paths in the module) build from, theirs
// included (`go list -deps`).
func deps(t *testing.T, pkgs ...string) []string {
	t.Helper()
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
	return strings.Fields(string(out))
}

// TestClientCommandsDoNotNeedTheSimulator: the CLI's factory and the
// commands that talk to any cluster (the manager, logs, workload) build
// without the simulated fleet; only the local-cluster commands import it.
func TestClientCommandsDoNotNeedTheSimulator(t *testing.T) {
	pkgs := []string{"internal/cli", "internal/cli/manager", "internal/cli/logs", "internal/cli/workload"}
	for _, dep := range deps(t, pkgs...) {
		if strings.HasPrefix(dep, module+"internal/localcluster") {
			t.Errorf("%v depend on %s: read the home through internal/home, not the local cluster", pkgs, dep)
		}
	}
}

// TestManagerBinaryCarriesNoCLI: the image's binary (cmd/multislice-manager)
// links none of the CLI (its client factory, kubectl's client flags and
// printers, kustomize behind them), the local cluster or its simulator.
func TestManagerBinaryCarriesNoCLI(t *testing.T) {
	for _, dep := range deps(t, "cmd/multislice-manager") {
		if dep == module+"internal/cli" || strings.HasPrefix(dep, module+"internal/localcluster") ||
			strings.HasPrefix(dep, "k8s.io/cli-runtime/") || strings.HasPrefix(dep, "sigs.k8s.io/kustomize/") {
			t.Errorf("cmd/multislice-manager depends on %s: the image's commands take program.Streams, not the CLI's factory", dep)
		}
	}
}

// pureDecisions decide without a client or a clock of their own: they
// import neither client-go nor controller-runtime (pureOfClients) and
// read the time only from what they are given.
var (
	pureOfClients = []string{"internal/controller/jobset/policy", "internal/tpujob", "internal/slicing", "api/jobset/v1alpha2", "api/accelerator/v1beta1"}
	noClock       = []string{"internal/controller/jobset/policy", "internal/placement", "internal/slicing"}
)

// TestPolicyIsPure: the JobSet controller's policy and the TPU checks
// build without any client library.
func TestPolicyIsPure(t *testing.T) {
	for _, p := range pureOfClients {
		for _, dep := range deps(t, p) {
			if strings.HasPrefix(dep, "k8s.io/client-go") || strings.HasPrefix(dep, "sigs.k8s.io/controller-runtime") {
				t.Errorf("%s depends on %s: a pure decision takes what it needs in its input", p, dep)
			}
		}
	}
}

// TestPolicyReadsNoClockAndStaysSmall: no time.Now in the decisions
// (the reconciler's injected clock gives them the time), and no function
// of the controller's policy over 60 lines.
func TestPolicyReadsNoClockAndStaysSmall(t *testing.T) {
	for _, p := range noClock {
		files, err := filepath.Glob(filepath.Join("../..", p, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no Go files in %s: %v", p, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(file, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.SelectorExpr:
					if id, ok := n.X.(*ast.Ident); ok && id.Name == "time" && n.Sel.Name == "Now" {
						t.Errorf("%s: time.Now in a decision: take the time from the observation", fset.Position(n.Pos()))
					}
				case *ast.FuncDecl:
					lines := fset.Position(n.End()).Line - fset.Position(n.Pos()).Line + 1
					if strings.HasSuffix(p, "/policy") && lines > 60 {
						t.Errorf("%s: %s is %d lines: split it (at most 60)", fset.Position(n.Pos()), n.Name.Name, lines)
					}
				}
				return true
			})
		}
	}
}

// sharedByCommands are the CLI packages commands may import: what two
// commands share lives there (as gh's cmdutil), never in a command.
var sharedByCommands = []string{"internal/cli", "internal/cli/program", "internal/cli/localfleet", "internal/cli/jobsetlist"}

// TestCommandsImportNoCommand: a command package imports no other command
// package; only the root assembles them.
func TestCommandsImportNoCommand(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"internal/cli/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		if pkg == "internal/cli/root" || slices.Contains(sharedByCommands, pkg) {
			continue
		}
		for _, imp := range fields[1:] {
			dep, ours := strings.CutPrefix(imp, module)
			if ours && strings.HasPrefix(dep, "internal/cli/") && !slices.Contains(sharedByCommands, dep) {
				t.Errorf("%s imports the command package %s: move what they share to a shared package (%v)", pkg, dep, sharedByCommands)
			}
		}
	}
}
