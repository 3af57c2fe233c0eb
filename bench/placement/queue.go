package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/controller/jobset/policy"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/test/framework"
)

// queue is the many-JobSets mode (-jobsets N): N one-slice JobSets
// submitted at once into a group of pools, then `queued` JobSets of
// queuedSlices slices each, which rank behind them and wait:
//
//	floor  the same N JobSets managed by nobody, each with the Job and the
//	       headless Service the controller would create, the Job pinned to
//	       its own pool by hand (the
//	       queued ones are created too and wait for ever, as nothing runs them);
//	ours   the N + queued exclusive-topology JobSets, placed by Multislice.
//
// Each round reports the time until the N*16 pods are Running, the
// manager's CPU over that time per one-slice JobSet, its memory, the API
// server's CPU and the writes it served (its own request counter, without
// the nodes' heartbeats). The summary pairs the i-th ours round with the
// i-th floor round and gives the median of the per-pair ratios with their
// spread: the floor's own time varies between rounds by more than the
// difference measured, so only rounds run side by side are compared.
type queue struct {
	*bench
	jobsets, queued, queuedSlices int
}

// manager and apiServer are process names in the local cluster.
const (
	manager   = "multislice-manager"
	apiServer = "kube-apiserver"
)

type queueRound struct {
	took     time.Duration
	cpu      time.Duration // the manager's
	apiCPU   time.Duration // the API server's
	rss, hwm int64
	writes   int            // the API server's, without heartbeats
	by       map[string]int // writes by verb and resource
	// statusWrites and events are the manager's own writes: JobSets'
	// status and the Events about JobSets (only the manager writes either).
	statusWrites, events int
	// refused are the status writes the API server refused, by code
	// ("409": a conflict, the manager's cache behind its own last write).
	refused map[string]int
	// changed are the manager's status writes by what each changed
	// (its multislice_jobset_status_writes_total), "TopologyAssigned+counts",
	// read just after the API server's counter once the writes settle.
	changed map[string]int
}

// heartbeats are writes the fleet makes whatever runs on it.
var heartbeats = map[string]bool{"leases": true, "nodes": true, "nodes/status": true}

func runQueue(c *framework.Cluster, b *bench, jobsets, queued, queuedSlices int, order []string) error {
	q := &queue{bench: b, jobsets: jobsets, queued: queued, queuedSlices: queuedSlices}
	ctx := context.Background()
	rounds := map[string][]queueRound{}
	for _, scenario := range order {
		warmup := scenario == "warmup"
		if warmup {
			scenario = "floor"
		}
		if scenario != "floor" && scenario != "ours" {
			return fmt.Errorf("unknown scenario %q with -jobsets (want floor, ours or warmup)", scenario)
		}
		cpu := c.CPU()
		writes, err := c.Writes(ctx)
		if err != nil {
			return err
		}
		changed, err := c.StatusWrites(ctx)
		if err != nil {
			return err
		}
		began := time.Now()
		if err := q.submit(ctx, scenario); err != nil {
			return fmt.Errorf("%s: %w", scenario, err)
		}
		took, err := b.waitPods(ctx, began, jobsets*hosts, oneSlice, framework.Patience(jobsets*hosts))
		if err != nil {
			return fmt.Errorf("%s: %w", scenario, err)
		}
		r := queueRound{took: took, cpu: c.CPU()[manager] - cpu[manager], apiCPU: c.CPU()[apiServer] - cpu[apiServer]}
		settle(ctx, c)
		after, err := c.Writes(ctx)
		if err != nil {
			return err
		}
		r.writes, r.by = framework.WritesSince(writes, after, func(resource string) bool { return heartbeats[resource] })
		if r.events, err = q.jobSetEvents(ctx, began); err != nil {
			return err
		}
		for k, n := range r.by { // conflicts too: each is a write the manager sent
			if strings.HasPrefix(k, "update jobsets/status") || strings.HasPrefix(k, "patch jobsets/status") {
				r.statusWrites += n
				if f := strings.Fields(k); len(f) == 3 {
					if r.refused == nil {
						r.refused = map[string]int{}
					}
					r.refused[f[2]] += n
				}
			}
		}
		r.rss, r.hwm = c.RSS(manager)
		changedAfter, err := c.StatusWrites(ctx)
		if err != nil {
			return err
		}
		for k, n := range changedAfter {
			if d := n - changed[k]; d > 0 {
				if r.changed == nil {
					r.changed = map[string]int{}
				}
				r.changed[k] = d
			}
		}
		queued, err := q.queuedState(ctx)
		if err != nil {
			return err
		}
		label := scenario
		if warmup {
			label = "warm-up"
		} else {
			rounds[scenario] = append(rounds[scenario], r)
		}
		fmt.Printf("%-8s %d JobSets' %d pods Running after %6.1fs; manager CPU %.1fs (%.3fs per JobSet), RSS %d MiB (peak %d MiB); manager's writes: %d JobSet status (refused: %v; by what changed: %v), %d events; API server CPU %.1fs, %d writes (%s); %s (CPU: %s)\n",
			label, jobsets, jobsets*hosts, took.Seconds(), r.cpu.Seconds(), r.cpu.Seconds()/float64(jobsets),
			r.rss>>20, r.hwm>>20, r.statusWrites, r.refused, r.changed, r.events, r.apiCPU.Seconds(), r.writes, writesText(r.by), queued, c.CPUSince(cpu))
		if err := b.cleanup(ctx); err != nil {
			return err
		}
	}
	reportQueue(rounds, jobsets, queued)
	return nil
}

// settle waits until the manager's status writes stop (none for 5 s, a
// minute at most): a JobSet writes that it is ready a moment after its
// pods run, so counting at the pods' Running missed the last JobSets'
// writes (4-17 a round at 1,024 hosts). Without the manager's count to
// watch, it waits 5 s.
func settle(ctx context.Context, c *framework.Cluster) {
	if writes, err := c.StatusWrites(ctx); err != nil || writes == nil {
		time.Sleep(5 * time.Second)
		return
	}
	framework.WaitStill(ctx, func(ctx context.Context) (int, error) {
		writes, err := c.StatusWrites(ctx)
		total := 0
		for _, n := range writes {
			total += n
		}
		return total, err
	}, 5*time.Second, time.Minute)
}

func reportQueue(rounds map[string][]queueRound, jobsets, queued int) {
	for _, name := range []string{"floor", "ours"} {
		rs := rounds[name]
		if len(rs) == 0 {
			continue
		}
		took := medianOf(rs, func(r queueRound) float64 { return r.took.Seconds() })
		fmt.Printf("%-8s median %6.1fs (%.1f-%.1f, %d rounds), manager CPU %.1fs, API server CPU %.1fs, writes %.0f\n", name, took.median, took.lo, took.hi, len(rs),
			medianOf(rs, func(r queueRound) float64 { return r.cpu.Seconds() }).median,
			medianOf(rs, func(r queueRound) float64 { return r.apiCPU.Seconds() }).median,
			medianOf(rs, func(r queueRound) float64 { return float64(r.writes) }).median)
	}
	floor, ours := rounds["floor"], rounds["ours"]
	n := min(len(floor), len(ours))
	if n == 0 {
		return
	}
	var ratio, api, extra []float64 // per pair: ours over the floor beside it
	for i := range n {
		ratio = append(ratio, ours[i].took.Seconds()/floor[i].took.Seconds())
		api = append(api, ours[i].apiCPU.Seconds()/max(floor[i].apiCPU.Seconds(), 0.01))
		extra = append(extra, float64(ours[i].writes-floor[i].writes)/float64(jobsets))
	}
	own := medianOf(ours, func(r queueRound) float64 { return float64(r.statusWrites+r.events) / float64(jobsets+queued) })
	fmt.Printf("the manager's own writes per JobSet (status and events; the floor makes none): %.2f (%.2f-%.2f)\n", own.median, own.lo, own.hi)
	t, a, w := spreadOf(ratio), spreadOf(api), spreadOf(extra)
	fmt.Printf("ours/floor, %d pairs run side by side: time %.2fx (%.2f-%.2f); API server CPU %.2fx (%.2f-%.2f); writes per JobSet above the floor %.2f (%.2f-%.2f)\n",
		n, t.median, t.lo, t.hi, a.median, a.lo, a.hi, w.median, w.lo, w.hi)
}

type spread struct{ median, lo, hi float64 }

// medianOf is the spread of f over rs.
func medianOf(rs []queueRound, f func(queueRound) float64) spread {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	return spreadOf(v)
}

// spreadOf is v's median (the upper one of an even count), min and max.
func spreadOf(v []float64) spread {
	v = slices.Clone(v)
	sort.Float64s(v)
	return spread{v[len(v)/2], v[0], v[len(v)-1]}
}

// writesText names the resources written most, with their counts.
func writesText(by map[string]int) string {
	names := make([]string, 0, len(by))
	for r := range by {
		names = append(names, r)
	}
	sort.Slice(names, func(i, j int) bool {
		return by[names[i]] > by[names[j]] || by[names[i]] == by[names[j]] && names[i] < names[j]
	})
	var parts []string
	for i, r := range names {
		if i == 8 {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %d", r, by[r]))
	}
	return strings.Join(parts, ", ")
}

func (q *queue) submit(ctx context.Context, scenario string) error {
	var sets []*api.JobSet
	var jobs []*batchv1.Job
	var services []*corev1.Service
	for i := 0; i < q.jobsets; i++ {
		name := fmt.Sprintf("one-%d", i)
		if scenario == "ours" {
			sets = append(sets, q.jobSetOf(name, 1, nil))
			continue
		}
		js := q.jobSetOf(name, 1, ptr.To("multislice.dev/bench-by-hand"))
		sets = append(sets, js)
	}
	// The one-slice JobSets first, all at once; the queued ones after
	// them, so they rank behind (older first).
	if err := q.createSets(ctx, sets); err != nil {
		return err
	}
	if scenario == "floor" {
		for i, js := range sets {
			plan := policy.Decide(policy.Observed{JobSet: js, Now: time.Now()})
			if len(plan.Create) != 1 {
				return fmt.Errorf("the controller's plan for %s has %d Jobs, want 1", js.Name, len(plan.Create))
			}
			j := plan.Create[0]
			pool := fmt.Sprintf("big-np-%d", i)
			api.Pin(j, gke.NodePoolLabel, pool)
			jobs = append(jobs, j)
			services = append(services, plan.Service)
		}
		if err := q.createAll(ctx, jobs); err != nil {
			return err
		}
		if err := framework.CreateAll(ctx, q.cl, services, 64); err != nil {
			return err
		}
	}
	var queued []*api.JobSet
	for i := 0; i < q.queued; i++ {
		var managedBy *string
		if scenario == "floor" {
			managedBy = ptr.To("multislice.dev/bench-by-hand")
		}
		queued = append(queued, q.jobSetOf(fmt.Sprintf("queued-%d", i), q.queuedSlices, managedBy))
	}
	return q.createSets(ctx, queued)
}

func (q *queue) jobSetOf(name string, slices int, managedBy *string) *api.JobSet {
	js := q.jobSet(name, managedBy)
	js.Spec.ReplicatedJobs[0].Replicas = int32(slices)
	return js
}

// createSets creates the JobSets at once and fills in their UIDs.
func (q *queue) createSets(ctx context.Context, sets []*api.JobSet) error {
	return framework.CreateAll(ctx, q.cl, sets, 64)
}

// oneSlice: a pod of one of the one-slice JobSets (the queued ones' pods,
// should any run, do not count).
func oneSlice(p *corev1.Pod) bool { return strings.HasPrefix(p.Labels[api.JobSetNameKey], "one-") }

// jobSetEvents counts the Events about JobSets since (only the manager
// writes them).
func (q *queue) jobSetEvents(ctx context.Context, since time.Time) (int, error) {
	var events corev1.EventList
	if err := q.cl.List(ctx, &events, client.InNamespace("default"), client.MatchingFields{"involvedObject.kind": "JobSet"}); err != nil {
		return 0, err
	}
	n := 0
	for _, e := range events.Items {
		if !e.CreationTimestamp.Time.Before(since.Truncate(time.Second)) {
			n += int(max(e.Count, 1))
		}
	}
	return n, nil
}

// queuedState says what became of the queued JobSets: how many are
// placed (TopologyAssigned=True), wait saying why (False), or have no
// word yet.
func (q *queue) queuedState(ctx context.Context) (string, error) {
	var sets api.JobSetList
	if err := q.cl.List(ctx, &sets, client.InNamespace("default")); err != nil {
		return "", err
	}
	placed, waiting, silent := 0, 0, 0
	for _, js := range sets.Items {
		if js.Spec.ReplicatedJobs[0].Replicas == 1 {
			continue
		}
		switch c := meta.FindStatusCondition(js.Status.Conditions, string(api.JobSetTopologyAssigned)); {
		case c == nil:
			silent++
		case c.Status == metav1.ConditionTrue:
			placed++
		default:
			waiting++
		}
	}
	var jobs batchv1.JobList
	if err := q.cl.List(ctx, &jobs, client.InNamespace("default")); err != nil {
		return "", err
	}
	byPool := map[string]int{}
	for _, j := range jobs.Items {
		if pool := j.Spec.Template.Spec.NodeSelector[gke.NodePoolLabel]; pool != "" && api.JobOutcome(&j) == "" {
			byPool[pool]++
		}
	}
	shared := 0
	for _, n := range byPool {
		if n > 1 {
			shared++
		}
	}
	return fmt.Sprintf("queued JobSets: %d placed, %d waiting with TopologyAssigned=False, %d without the condition; pools with two running Jobs: %d",
		placed, waiting, silent, shared), nil
}
