// Command localcluster measures `multislice up` with cached binaries: time
// to a Ready fleet for the default fleet and for a large generated one, and
// the memory the cluster's processes use, then `multislice down`. With
// -kueue N it measures instead what `up --kueue` costs: N rounds of the
// default fleet with and without Kueue, interleaved.
//
//	go run ./bench/localcluster -nodes 1000
//	go run ./bench/localcluster -kueue 3
package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/multislice/multislice/test/framework"
)

func main() {
	nodes := flag.Int("nodes", 1000, "hosts of the large fleet (v4 2x2x2 pools of 2 hosts, groups of 4 pools)")
	bin := flag.String("bin", "bin", "directory with multislice and the control-plane binaries")
	kueueRounds := flag.Int("kueue", 0, "rounds of up with and without --kueue (default fleet), interleaved; 0: the fleets above")
	flag.Parse()
	if *kueueRounds > 0 {
		if err := kueueCost(*bin, *kueueRounds); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
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
	took, status, err := up(bin, fleet)
	if err != nil {
		return 0, "", err
	}
	mem := "?"
	if m := regexp.MustCompile(`(?m)^total\s+(\d+ MiB)`).FindStringSubmatch(status); m != nil {
		mem = m[1]
	}
	return took, mem, nil
}

// up times `multislice up` and returns `multislice status` of the cluster
// it started, then stops it.
func up(bin, fleet string, upArgs ...string) (time.Duration, string, error) {
	start := time.Now()
	c, err := framework.Up(bin, fleet, nil, upArgs...)
	if err != nil {
		return 0, "", err
	}
	took := time.Since(start)
	defer c.Down()
	status, err := c.Run("status")
	return took, status, err
}

// kueueCost prints the time `up` takes and the memory the cluster uses
// with and without --kueue, and Kueue's own memory.
func kueueCost(bin string, rounds int) error {
	mib := func(status, row string) float64 {
		m := regexp.MustCompile(`(?m)^` + row + `\s.*?(\d+) MiB`).FindStringSubmatch(status)
		if m == nil {
			return 0
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v
	}
	var plain, withKueue, plainMem, kueueMem, kueueOwn []float64
	for r := 0; r < rounds; r++ {
		for _, kueue := range []bool{false, true} {
			var args []string
			if kueue {
				args = []string{"--kueue"}
			}
			took, status, err := up(bin, "", args...)
			if err != nil {
				return err
			}
			if kueue {
				withKueue, kueueMem, kueueOwn = append(withKueue, took.Seconds()), append(kueueMem, mib(status, "total")), append(kueueOwn, mib(status, "kueue"))
			} else {
				plain, plainMem = append(plain, took.Seconds()), append(plainMem, mib(status, "total"))
			}
		}
	}
	fmt.Printf("%-14s %22s %24s\n", "default fleet", "up: median (min-max)", "memory: median (min-max)")
	fmt.Printf("%-14s %22s %24s\n", "without Kueue", stats(plain, "s"), stats(plainMem, " MiB"))
	fmt.Printf("%-14s %22s %24s\n", "with --kueue", stats(withKueue, "s"), stats(kueueMem, " MiB"))
	fmt.Printf("%-14s %22s %24s\n", "kueue process", "", stats(kueueOwn, " MiB"))
	return nil
}

func stats(v []float64, unit string) string {
	s := slices.Clone(v)
	slices.Sort(s)
	return fmt.Sprintf("%.1f%s (%.1f-%.1f)", s[len(s)/2], unit, s[0], s[len(s)-1])
}
