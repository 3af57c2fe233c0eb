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
	"regexp"
	"strings"
	"time"

	"github.com/multislice/multislice/bench/benchcluster"
)

func main() {
	nodes := flag.Int("nodes", 1000, "hosts of the large fleet (v4 2x2x2 pools of 2 hosts, groups of 4 pools)")
	bin := flag.String("bin", "bin", "directory with multislice and the control-plane binaries")
	flag.Parse()
	fmt.Printf("%-22s %10s %10s\n", "fleet", "up", "memory")
	for _, fleet := range []struct{ name, yaml string }{
		{"default (11 nodes)", ""},
		{fmt.Sprintf("generated (%d nodes)", *nodes), generateFleet(*nodes)},
	} {
		took, mem, err := measure(*bin, fleet.yaml)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("%-22s %9.1fs %10s\n", fleet.name, took.Seconds(), mem)
	}
}

func generateFleet(nodes int) string {
	var b strings.Builder
	b.WriteString("apiVersion: multislice.dev/v1alpha1\nkind: Fleet\ngroups:\n")
	for g := 0; g < nodes/8; g++ {
		fmt.Fprintf(&b, "- {name: g%d, accelerator: tpu-v4-podslice, topology: 2x2x2, slices: 4}\n", g)
	}
	return b.String()
}

// measure times `multislice up` (the clients Up makes take milliseconds)
// and reads the cluster's memory from `multislice status`.
func measure(bin, fleet string) (time.Duration, string, error) {
	start := time.Now()
	c, err := benchcluster.Up(bin, fleet, nil)
	if err != nil {
		return 0, "", err
	}
	took := time.Since(start)
	defer c.Down()
	status, _ := c.Run("status")
	mem := "?"
	if m := regexp.MustCompile(`(?m)^total\s+(\d+ MiB)`).FindStringSubmatch(status); m != nil {
		mem = m[1]
	}
	return took, mem, nil
}
