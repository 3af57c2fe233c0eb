// Command slicing measures the cost of forming dynamic slices (the
// manager's formation decision, internal/slicing.Form) at a full tpu7x
// block: 144 4x4x4 cubes (a 4x6x6 grid, 2,304 hosts), with -slices queued
// one-slice decisions of mixed shapes (4x4x4, 4x4x8, 4x8x8, 8x8x8) taken one
// after the other as the block fills, as a queue of JobSets would be. Each
// round runs them all again; it reports per-decision time (median,
// min-max, N), the slices formed before the first that no longer fits,
// and the goal (<= 10 ms per decision).
//
//	go run ./bench/slicing -slices 100 -rounds 5
//
// With -cluster it starts a local cluster instead (cluster.go) and
// compares a 2 x 4x4x8 JobSet on dynamic cubes with the same shape on
// fixed node pools, interleaved: start, and recovery from one failed host.
//
//	go run ./bench/slicing -cluster -rounds 3
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/multislice/multislice/internal/slicing"
	"github.com/multislice/multislice/internal/tpu"
)

func main() {
	n := flag.Int("slices", 100, "queued one-slice decisions per round (at most 10000)")
	rounds := flag.Int("rounds", 5, "rounds (at most 100)")
	cluster := flag.Bool("cluster", false, "on a local cluster: dynamic vs fixed slices, start and recovery")
	bin := flag.String("bin", "bin", "directory with multislice and the control-plane binaries (-cluster)")
	inPlace := flag.Bool("inplace", false, "-cluster: both sides restart in place (KEP-467): the failed slice's Job is made again, every other pod restarts in place")
	flag.Parse()
	if *cluster {
		if *rounds > 10 {
			fmt.Fprintln(os.Stderr, "-cluster: -rounds at most 10")
			os.Exit(2)
		}
		if err := onCluster(*bin, *rounds, *inPlace); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if *n < 1 || *n > 10000 || *rounds < 1 || *rounds > 100 {
		fmt.Fprintln(os.Stderr, "-slices must be 1 to 10000 and -rounds 1 to 100")
		os.Exit(2)
	}
	shapes := []string{"4x4x4", "4x4x8", "4x8x8", "4x4x4", "4x4x8", "8x8x8"}
	var times []time.Duration
	formed, used := 0, 0
	for r := 0; r < *rounds; r++ {
		cubes := block(4, 6, 6)
		formed, used = 0, 0
		for i := 0; i < *n; i++ {
			t, _ := tpu.ParseTopology(shapes[i%len(shapes)])
			w := slicing.Want{Name: fmt.Sprintf("s%d", i), Topology: t}
			began := time.Now()
			res := slicing.Form([]slicing.Want{w}, cubes)
			times = append(times, time.Since(began))
			if res.Cubes == nil {
				continue
			}
			formed++
			used += len(res.Cubes[w.Name])
			for _, id := range res.Cubes[w.Name] {
				for j := range cubes {
					if cubes[j].ID == id {
						cubes[j].Free = false
					}
				}
			}
		}
	}
	slices.Sort(times)
	fmt.Printf("formation at 1 block x 144 cubes: %d decisions (%d rounds x %d queued slices)\n", len(times), *rounds, *n)
	fmt.Printf("  per decision: median %s, min %s, max %s (goal <= 10ms)\n",
		times[len(times)/2].Round(time.Microsecond), times[0].Round(time.Microsecond), times[len(times)-1].Round(time.Microsecond))
	fmt.Printf("  formed %d of %d slices in the last round, on %d of the block's 144 cubes (the rest fit no queued shape)\n", formed, *n, used)
}

// block is a grid of free cubes of x*y*z.
func block(x, y, z int) []slicing.Cube {
	var out []slicing.Cube
	for k := range z {
		for j := range y {
			for i := range x {
				out = append(out, slicing.Cube{ID: fmt.Sprintf("c-%d-%d-%d", i, j, k), Block: "b", Pos: slicing.Pos{i, j, k}, Free: true})
			}
		}
	}
	return out
}
