// Command soak is a chaos soak of the local cluster: three multislice
// JobSets on two multislice groups, a random fault (maintenance, preempt,
// fail-host, fail-pod) on a pool one of them holds every 20-40 s, for
// -duration. It counts faults and recoveries (the hit JobSet restarted and
// every pod of every JobSet Running again), then checks that every JobSet
// is Running and that no Job or pod was left behind.
//
//	go run ./bench/soak -duration 15m
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/test/framework"
)

const fleet = `apiVersion: multislice.dev/v1alpha1
kind: Fleet
groups:
- {name: group-a, accelerator: tpu-v4-podslice, topology: 2x2x2, slices: 4, spares: 1}
- {name: group-b, accelerator: tpu-v4-podslice, topology: 2x2x2, slices: 4, spares: 1}
capacity: {tpu-v4-podslice: 6}
`

// workloads: name -> slices (v4-16: 2 hosts a slice).
var workloads = map[string]int{"big": 4, "left": 2, "right": 2}

var faults = []string{"maintenance", "preempt", "fail-host", "fail-pod"}

type fault struct {
	kind, jobset, pool string
	at                 time.Time
	restartsBefore     int32
	recovered          time.Duration
}

func main() {
	bin := flag.String("bin", "bin", "directory with multislice and the control-plane binaries")
	duration := flag.Duration("duration", 15*time.Minute, "how long to inject faults")
	minGap := flag.Duration("min-gap", 20*time.Second, "shortest time between two faults")
	maxGap := flag.Duration("max-gap", 40*time.Second, "longest time between two faults")
	seed := flag.Uint64("seed", uint64(time.Now().UnixNano()), "random seed (printed, to replay a run)")
	flag.Parse()
	if err := run(*bin, *duration, *minGap, *maxGap, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

func run(bin string, duration, minGap, maxGap time.Duration, seed uint64) error {
	fmt.Printf("soak: %s of faults every %s-%s, seed %d\n", duration, minGap, maxGap, seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	c, err := framework.Up(bin, fleet, nil, "--repair-delay=10s")
	if err != nil {
		return err
	}
	defer c.Down()
	ctx := context.Background()
	names := make([]string, 0, len(workloads))
	for name, slices := range workloads {
		names = append(names, name)
		if out, err := c.Run("workload", "create", name, "--tpu-type=v4-16", "--num-slices="+strconv.Itoa(slices),
			"--command=python train.py", "--max-restarts=1000"); err != nil {
			return fmt.Errorf("workload create %s: %v\n%s", name, err, out)
		}
	}
	sort.Strings(names)
	if err := waitAllRunning(ctx, c, names, 3*time.Minute); err != nil {
		return err
	}
	var done []*fault
	var pending []*fault
	began, next := time.Now(), time.Now()
	for time.Since(began) < duration || len(pending) > 0 && time.Since(began) < duration+3*time.Minute {
		if time.Since(began) < duration && time.Now().After(next) {
			f, err := inject(ctx, c, rng, names)
			if err != nil {
				fmt.Println("  fault not injected:", err)
			} else {
				fmt.Printf("%6.0fs %-11s %-5s on %s\n", time.Since(began).Seconds(), f.kind, f.jobset, f.pool)
				pending = append(pending, f)
			}
			next = time.Now().Add(minGap + time.Duration(rng.Int64N(int64(maxGap-minGap)+1)))
		}
		running := allRunning(ctx, c, names)
		still := pending[:0]
		for _, f := range pending {
			var js api.JobSet
			if err := c.Objects.Get(ctx, client.ObjectKey{Namespace: "default", Name: f.jobset}, &js); err == nil &&
				js.Status.Restarts > f.restartsBefore && running {
				f.recovered = time.Since(f.at)
				done = append(done, f)
				continue
			}
			still = append(still, f)
		}
		pending = still
		time.Sleep(250 * time.Millisecond)
	}
	settleErr := waitAllRunning(ctx, c, names, 3*time.Minute)
	orphans := findOrphans(ctx, c, names)
	report(done, pending, orphans, settleErr)
	if settleErr != nil || len(orphans) > 0 || len(pending) > 0 {
		return fmt.Errorf("the soak failed: see above")
	}
	return nil
}

// inject picks a JobSet and one of the pools it holds, and a fault.
func inject(ctx context.Context, c *framework.Cluster, rng *rand.Rand, names []string) (*fault, error) {
	name := names[rng.IntN(len(names))]
	var js api.JobSet
	if err := c.Objects.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &js); err != nil {
		return nil, err
	}
	var jobs batchv1.JobList
	if err := c.Objects.List(ctx, &jobs, client.InNamespace("default"), client.MatchingLabels{
		api.JobSetNameKey: name, api.RestartsKey: strconv.Itoa(int(js.Status.Restarts))}); err != nil {
		return nil, err
	}
	var pools []string
	for _, j := range jobs.Items {
		if p := api.PinnedDomain(&j); p != "" && j.DeletionTimestamp == nil {
			pools = append(pools, p)
		}
	}
	if len(pools) == 0 {
		return nil, fmt.Errorf("%s holds no pool right now", name)
	}
	f := &fault{kind: faults[rng.IntN(len(faults))], jobset: name, pool: pools[rng.IntN(len(pools))], restartsBefore: js.Status.Restarts}
	if out, err := c.Run("chaos", f.kind, "--nodepool", f.pool); err != nil {
		return nil, fmt.Errorf("chaos %s: %v\n%s", f.kind, err, out)
	}
	f.at = time.Now()
	return f, nil
}

// allRunning: every JobSet has all its pods Running at its current attempt
// and none other.
func allRunning(ctx context.Context, c *framework.Cluster, names []string) bool {
	for _, name := range names {
		var js api.JobSet
		if err := c.Objects.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &js); err != nil {
			return false
		}
		pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: api.JobSetNameKey + "=" + name})
		if err != nil {
			return false
		}
		want, running := workloads[name]*2, 0
		for _, p := range pods.Items {
			if p.Labels[api.RestartsKey] != strconv.Itoa(int(js.Status.Restarts)) {
				return false // an old attempt's pod is still there
			}
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running++
			}
		}
		if running != want {
			return false
		}
	}
	return true
}

func waitAllRunning(ctx context.Context, c *framework.Cluster, names []string, limit time.Duration) error {
	for began := time.Now(); time.Since(began) < limit; time.Sleep(500 * time.Millisecond) {
		if allRunning(ctx, c, names) {
			return nil
		}
	}
	return fmt.Errorf("not every JobSet Running after %s", limit)
}

// findOrphans lists Jobs of an earlier attempt that are not going away and
// pods whose Job is gone, once the cluster has settled.
func findOrphans(ctx context.Context, c *framework.Cluster, names []string) []string {
	var out []string
	for _, name := range names {
		var js api.JobSet
		if err := c.Objects.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &js); err != nil {
			out = append(out, "jobset "+name+": "+err.Error())
			continue
		}
		if js.Status.TerminalState != "" {
			out = append(out, fmt.Sprintf("jobset %s finished: %s", name, js.Status.TerminalState))
		}
	}
	jobs, _ := c.Client.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{LabelSelector: api.JobSetNameKey})
	current := map[string]bool{}
	for _, j := range jobs.Items {
		var js api.JobSet
		if err := c.Objects.Get(ctx, client.ObjectKey{Namespace: "default", Name: j.Labels[api.JobSetNameKey]}, &js); err != nil ||
			j.Labels[api.RestartsKey] != strconv.Itoa(int(js.Status.Restarts)) && j.DeletionTimestamp == nil {
			out = append(out, "job "+j.Name+" of attempt "+j.Labels[api.RestartsKey])
		}
		current[j.Name] = true
	}
	pods, _ := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: api.JobSetNameKey})
	for _, p := range pods.Items {
		if !current[p.Labels["job-name"]] {
			out = append(out, "pod "+p.Name+" of a Job that is gone")
		}
	}
	return out
}

func report(done, pending []*fault, orphans []string, settleErr error) {
	byKind := map[string][]time.Duration{}
	for _, f := range done {
		byKind[f.kind] = append(byKind[f.kind], f.recovered)
	}
	fmt.Printf("\n%-12s %8s %10s %8s %8s %8s\n", "fault", "injected", "recovered", "median", "min", "max")
	for _, k := range faults {
		d := byKind[k]
		lost := 0
		for _, f := range pending {
			if f.kind == k {
				lost++
			}
		}
		if len(d) == 0 {
			fmt.Printf("%-12s %8d %10d\n", k, len(d)+lost, 0)
			continue
		}
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		fmt.Printf("%-12s %8d %10d %7.1fs %7.1fs %7.1fs\n", k, len(d)+lost, len(d), d[len(d)/2].Seconds(), d[0].Seconds(), d[len(d)-1].Seconds())
	}
	fmt.Printf("faults %d, recovered %d, not recovered %d\n", len(done)+len(pending), len(done), len(pending))
	if settleErr != nil {
		fmt.Println("at the end:", settleErr)
	} else {
		fmt.Println("at the end: every JobSet Running")
	}
	if len(orphans) == 0 {
		fmt.Println("orphans: none")
	} else {
		fmt.Println("orphans:\n  " + strings.Join(orphans, "\n  "))
	}
}
