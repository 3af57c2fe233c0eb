// Command localcluster measures `multislice up` with cached binaries: time
// to a Ready fleet for the default fleet and for a large generated one, and
// the memory the cluster's processes use, then `multislice down`.
//
//	go run ./bench/localcluster -nodes 1000
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

func main() {
	nodes := flag.Int("nodes", 1000, "hosts of the large fleet (v4 2x2x2 pools of 2 hosts, groups of 4 pools)")
	bin := flag.String("bin", "bin", "directory with multislice and the control-plane binaries")
	flag.Parse()
	abs, _ := filepath.Abs(*bin)
	fmt.Printf("%-22s %10s %10s\n", "fleet", "up", "memory")
	for _, fleet := range []struct{ name, file string }{
		{"default (11 nodes)", ""},
		{fmt.Sprintf("generated (%d nodes)", *nodes), writeFleet(*nodes)},
	} {
		took, mem, err := measure(abs, fleet.file)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("%-22s %9.1fs %10s\n", fleet.name, took.Seconds(), mem)
	}
}

func writeFleet(nodes int) string {
	groups := nodes / 8
	var b strings.Builder
	b.WriteString("apiVersion: multislice.dev/v1alpha1\nkind: Fleet\ngroups:\n")
	for g := 0; g < groups; g++ {
		fmt.Fprintf(&b, "- {name: g%d, accelerator: tpu-v4-podslice, topology: 2x2x2, slices: 4}\n", g)
	}
	f, _ := os.CreateTemp("", "fleet-*.yaml")
	f.WriteString(b.String())
	f.Close()
	return f.Name()
}

func measure(bin, fleetFile string) (time.Duration, string, error) {
	home, _ := os.MkdirTemp("", "multislice-bench-")
	defer os.RemoveAll(home)
	run := func(args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(bin, "multislice"), args...)
		cmd.Env = append(os.Environ(), "MULTISLICE_HOME="+home, "MULTISLICE_BIN_DIR="+bin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	args := []string{"up"}
	if fleetFile != "" {
		args = append(args, "--fleet", fleetFile)
	}
	start := time.Now()
	out, err := run(args...)
	took := time.Since(start)
	defer run("down")
	if err != nil {
		return 0, "", fmt.Errorf("up: %v\n%s", err, out)
	}
	status, _ := run("status")
	mem := "?"
	if m := regexp.MustCompile(`(?m)^total\s+(\d+ MiB)`).FindStringSubmatch(status); m != nil {
		mem = m[1]
	}
	return took, mem, nil
}
