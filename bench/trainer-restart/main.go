// Command trainer-restart measures a restart of a real training job on
// real hosts: examples/trainer on two real v4-16 slices of
// examples/fleet-real.yaml (kubelets and containerds on this machine), one
// worker's process SIGKILLed once a checkpoint exists, until every worker
// has completed its first training step after resuming from the
// checkpoint. Recreate (examples/trainer-jobset.yaml) and InPlaceRestart
// (examples/trainer-in-place-jobset.yaml) run interleaved on one cluster,
// rounds times, each round split into:
//
//	detection  the fault to the controller's decision (status.restarts, or
//	           status.previousInPlaceRestartAttempt)
//	stopping   to every old trainer stopped (recreate: its pod gone from
//	           the API, its kubelet having stopped it; in place: its pod's
//	           containers restarted)
//	starting   to every new container running (recreate: the trainers in
//	           new pods; in place: the agents, holding the barrier)
//	barrier    to every trainer process started (in place: the agents
//	           joined the attempt, the controller declared it current,
//	           the startup probes passed)
//	load       to every trainer resumed from the checkpoint
//	first step to every trainer's first step after it (the all-reduce
//	           connects every worker)
//
// Milestones from the API are polled every 100 ms; the trainers' from
// their containers' log timestamps. Needs root (real hosts).
//
//	go run ./bench/trainer-restart -rounds 3
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/test/framework"
)

const checkpoints = "/var/tmp/multislice-checkpoints/trainer" // the examples' hostPath

var phases = []string{"detection", "stopping", "starting", "barrier", "load", "first step"}

func main() {
	rounds := flag.Int("rounds", 3, "restarts of each kind (1..10)")
	bin := flag.String("bin", "bin", "directory with multislice and the control-plane binaries")
	hostLost := flag.Bool("host-lost", true, "also lose the coordinator's host, rounds times (about 100 s each)")
	flag.Parse()
	if *rounds < 1 || *rounds > 10 {
		fmt.Fprintln(os.Stderr, "-rounds must be 1..10")
		os.Exit(2)
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "real hosts need root")
		os.Exit(2)
	}
	if err := run(*bin, *rounds, *hostLost); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(bin string, rounds int, hostLost bool) error {
	fleet, err := os.ReadFile("examples/fleet-real.yaml")
	if err != nil {
		return fmt.Errorf("run from the repository's root: %w", err)
	}
	c, err := framework.Up(bin, string(fleet), nil, "--feature-gates=InPlaceRestart=true")
	if err != nil {
		return err
	}
	defer c.Down()
	defer os.RemoveAll(checkpoints)
	trainer := filepath.Join(c.Home, "trainer")
	build := exec.Command("go", "build", "-o", trainer, "./examples/trainer")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build the trainer: %v\n%s", err, out)
	}
	if out, err := c.Run("image", "load", trainer, "ghcr.io/multislice/trainer:dev"); err != nil {
		return fmt.Errorf("image load: %v\n%s", err, out)
	}
	files := map[string]string{"recreate": "examples/trainer-jobset.yaml", "in-place": "examples/trainer-in-place-jobset.yaml"}
	byKind := map[string][][]time.Duration{}
	for r := 1; r <= rounds; r++ {
		for _, kind := range []string{"recreate", "in-place"} {
			split, err := round(c, files[kind], kind == "in-place")
			if err != nil {
				return fmt.Errorf("round %d %s: %w", r, kind, err)
			}
			byKind[kind] = append(byKind[kind], split)
			fmt.Printf("round %d %-8s fault to every worker's first step after resuming: %5.2fs (%s); load %s\n",
				r, kind, sum(split).Seconds(), describe(split), framework.LoadAverage())
		}
	}
	var lost [][]time.Duration
	for r := 1; hostLost && r <= rounds; r++ {
		split, err := hostLostRound(c)
		if err != nil {
			return fmt.Errorf("round %d host lost: %w", r, err)
		}
		lost = append(lost, split)
		fmt.Printf("round %d host lost (the coordinator's, in place): NotReady after %.2fs (the node monitor's grace), slice failed %.2fs later (slice health's grace: 10s), every worker's first step after resuming %.2fs later; load %s\n",
			r, split[0].Seconds(), split[1].Seconds(), split[2].Seconds(), framework.LoadAverage())
	}
	if hostLost {
		m := medians(lost)
		fmt.Printf("host lost: NotReady to slice failed median %.2fs (%s, N=%d); whole restart median %.2fs\n", m[1].Seconds(), spread(lost, 1), len(lost), sum(m).Seconds())
	}
	total := map[string]float64{}
	for _, kind := range []string{"recreate", "in-place"} {
		var totals []float64
		for _, s := range byKind[kind] {
			totals = append(totals, sum(s).Seconds())
		}
		sort.Float64s(totals)
		total[kind] = totals[len(totals)/2]
		fmt.Printf("%-8s median %.2fs (%.2f-%.2f, N=%d); phase medians: %s\n", kind, total[kind], totals[0], totals[len(totals)-1], len(totals), describe(medians(byKind[kind])))
	}
	fmt.Printf("in-place / recreate: %.2fx\n", total["in-place"]/total["recreate"])
	return nil
}

// hostLostRound runs the in-place trainer, stops the kubelet of the
// coordinator's host once a checkpoint exists, and returns the fault to
// the node NotReady, to the controller deleting that slice's pods, to
// every worker's first step after resuming; then starts the kubelet again.
func hostLostRound(c *framework.Cluster) ([]time.Duration, error) {
	ctx := context.Background()
	js, err := startTrainer(ctx, c, "examples/trainer-in-place-jobset.yaml")
	if err != nil {
		return nil, err
	}
	defer deleteTrainer(ctx, c, js)
	var coordinator corev1.Pod
	for _, p := range pods(ctx, c) {
		if strings.HasPrefix(p.Name, "trainer-slice-0-0-") {
			coordinator = p
		}
	}
	node, err := c.Client.CoreV1().Nodes().Get(ctx, coordinator.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	pool := node.Labels[gke.NodePoolLabel]
	host := strings.TrimPrefix(node.Name, "gke-"+pool+"-")
	began := time.Now()
	if out, err := c.Run("chaos", "fail-host", "--nodepool", pool, "--host", host); err != nil {
		return nil, fmt.Errorf("chaos: %v\n%s", err, out)
	}
	var m milestones
	if err := m.wait(func() bool {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		return err == nil && !nodeReady(n)
	}); err != nil {
		return nil, fmt.Errorf("NotReady: %w", err)
	}
	if err := m.wait(func() bool {
		for _, p := range pods(ctx, c) {
			if p.UID == coordinator.UID {
				return false
			}
		}
		return true
	}); err != nil {
		return nil, fmt.Errorf("slice failed: %w", err)
	}
	if err := m.wait(func() bool {
		n := 0
		for _, p := range pods(ctx, c) {
			if _, _, _, ok := trainerTimes(ctx, c, p); ok && p.Annotations[api.InPlaceRestartAttemptKey] == "1" {
				n++
			}
		}
		return n == 4
	}); err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	if out, err := c.Run("up"); err != nil {
		return nil, fmt.Errorf("up (the kubelet again): %v\n%s", err, out)
	}
	if err := poll(2*time.Minute, func() bool {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		return err == nil && nodeReady(n)
	}); err != nil {
		return nil, fmt.Errorf("node %s Ready again: %w", node.Name, err)
	}
	return m.split(began), nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// round starts the trainer from no checkpoint, kills a worker once a
// checkpoint exists, and returns the phases of the restart, then deletes it.
func round(c *framework.Cluster, file string, inPlace bool) ([]time.Duration, error) {
	ctx := context.Background()
	js, err := startTrainer(ctx, c, file)
	if err != nil {
		return nil, err
	}
	defer deleteTrainer(ctx, c, js)
	old := map[string]int32{} // pod UID -> the trainer's restart count
	for _, p := range pods(ctx, c) {
		old[string(p.UID)] = trainerStatus(p).RestartCount
	}
	began := time.Now()
	if out, err := c.Run("chaos", "kill-worker", "trainer", "--slice", "1", "--worker", "1"); err != nil {
		return nil, fmt.Errorf("chaos: %v\n%s", err, out)
	}
	// new: a pod of the restart whose trainer container runs (for in
	// place: whose containers restarted, the agent running).
	isNew := func(p corev1.Pod) bool {
		was, kept := old[string(p.UID)]
		return !kept || trainerStatus(p).RestartCount > was
	}
	var m milestones
	if err := m.wait(func() bool {
		var now api.JobSet
		if c.Objects.Get(ctx, client.ObjectKeyFromObject(js), &now) != nil {
			return false
		}
		return now.Status.Restarts > 0 || now.Status.PreviousInPlaceRestartAttempt != nil
	}); err != nil {
		return nil, fmt.Errorf("detection: %w", err)
	}
	if err := m.wait(func() bool {
		list, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: api.JobSetNameKey + "=trainer"})
		if err != nil {
			return false
		}
		for _, p := range list.Items { // being deleted too: gone once its kubelet stopped it
			if !isNew(p) {
				return false
			}
		}
		return true
	}); err != nil {
		return nil, fmt.Errorf("stopping: %w", err)
	}
	if err := m.wait(func() bool {
		n := 0
		for _, p := range pods(ctx, c) {
			if isNew(p) && (inPlace && agentRunning(p) || !inPlace && trainerRunning(p)) {
				n++
			}
		}
		return n == 4
	}); err != nil {
		return nil, fmt.Errorf("starting: %w", err)
	}
	var started, loaded, stepped []time.Time
	if err := poll(3*time.Minute, func() bool {
		started, loaded, stepped = started[:0], loaded[:0], stepped[:0]
		for _, p := range pods(ctx, c) {
			s, l, f, ok := trainerTimes(ctx, c, p)
			if !ok || !isNew(p) {
				return false
			}
			started, loaded, stepped = append(started, s), append(loaded, l), append(stepped, f)
		}
		return len(started) == 4
	}); err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	m.at = append(m.at, latest(started), latest(loaded), latest(stepped))
	return m.split(began), nil
}

// startTrainer creates the JobSet of file with no checkpoint, and returns
// once its four trainers run and a checkpoint exists.
func startTrainer(ctx context.Context, c *framework.Cluster, file string) (*api.JobSet, error) {
	if err := os.RemoveAll(checkpoints); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	js := &api.JobSet{}
	if err := yaml.UnmarshalStrict(data, js); err != nil {
		return nil, err
	}
	js.Namespace = "default"
	if err := c.Objects.Create(ctx, js); err != nil {
		return nil, err
	}
	err = poll(3*time.Minute, func() bool {
		n := 0
		for _, p := range pods(ctx, c) {
			if trainerRunning(p) {
				n++
			}
		}
		ckpts, _ := filepath.Glob(filepath.Join(checkpoints, "ckpt-*.json"))
		return n == 4 && len(ckpts) > 0
	})
	if err != nil {
		deleteTrainer(ctx, c, js)
		return nil, fmt.Errorf("the trainer did not start and checkpoint: %w", err)
	}
	return js, nil
}

// deleteTrainer deletes the JobSet and waits until its pods are gone.
func deleteTrainer(ctx context.Context, c *framework.Cluster, js *api.JobSet) {
	_ = c.Objects.Delete(ctx, js, client.PropagationPolicy(metav1.DeletePropagationForeground))
	for i := 0; i < 300 && (len(pods(ctx, c)) > 0 || c.Objects.Get(ctx, client.ObjectKeyFromObject(js), &api.JobSet{}) == nil); i++ {
		time.Sleep(200 * time.Millisecond)
	}
}

// trainerTimes reads a trainer's log: when its process printed its first
// line, when it resumed from the checkpoint, and when it completed the
// first step after that.
func trainerTimes(ctx context.Context, c *framework.Cluster, p corev1.Pod) (start, resumed, step time.Time, ok bool) {
	raw, err := c.Client.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: "trainer", Timestamps: true}).DoRaw(ctx)
	if err != nil {
		return start, resumed, step, false
	}
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	for sc.Scan() {
		ts, line, _ := strings.Cut(sc.Text(), " ")
		at, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			continue
		}
		switch {
		case start.IsZero():
			start = at
		case strings.HasPrefix(line, "resumed from checkpoint step"):
			resumed = at
		case strings.HasPrefix(line, "step=") && !resumed.IsZero():
			return start, resumed, at, true
		}
	}
	return start, resumed, step, false
}

func pods(ctx context.Context, c *framework.Cluster) []corev1.Pod {
	list, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: api.JobSetNameKey + "=trainer"})
	if err != nil {
		return nil
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

func trainerStatus(p corev1.Pod) corev1.ContainerStatus {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == "trainer" {
			return s
		}
	}
	return corev1.ContainerStatus{}
}

func trainerRunning(p corev1.Pod) bool { return trainerStatus(p).State.Running != nil }

func agentRunning(p corev1.Pod) bool {
	for _, s := range p.Status.InitContainerStatuses {
		if s.State.Running != nil {
			return true
		}
	}
	return false
}

func poll(timeout time.Duration, ok func() bool) error {
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s", timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// milestones are the times a round saw each awaited state first.
type milestones struct{ at []time.Time }

// wait polls until ok, then records the time (also when it gave up).
func (m *milestones) wait(ok func() bool) error {
	err := poll(3*time.Minute, ok)
	m.at = append(m.at, time.Now())
	return err
}

// split is the time from began to the first milestone, then between
// successive ones (never negative: the trainers' log times may precede the
// API's observation of the state before them).
func (m milestones) split(began time.Time) []time.Duration {
	out, prev := make([]time.Duration, len(m.at)), began
	for i, t := range m.at {
		out[i], prev = max(t.Sub(prev), 0), maxTime(prev, t)
	}
	return out
}

func latest(ts []time.Time) time.Time { return slices.MaxFunc(ts, time.Time.Compare) }

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func sum(split []time.Duration) time.Duration {
	var t time.Duration
	for _, d := range split {
		t += d
	}
	return t
}

// spread is the min-max of phase i over the rounds.
func spread(rounds [][]time.Duration, i int) string {
	var v []float64
	for _, r := range rounds {
		v = append(v, r[i].Seconds())
	}
	return fmt.Sprintf("%.2f-%.2f", slices.Min(v), slices.Max(v))
}

func describe(split []time.Duration) string {
	var parts []string
	for i, d := range split {
		parts = append(parts, fmt.Sprintf("%s %.2fs", phases[i], d.Seconds()))
	}
	return strings.Join(parts, ", ")
}

// medians is the median of each phase over the rounds.
func medians(rounds [][]time.Duration) []time.Duration {
	out := make([]time.Duration, len(rounds[0]))
	for i := range out {
		var v []time.Duration
		for _, r := range rounds {
			v = append(v, r[i])
		}
		sort.Slice(v, func(a, b int) bool { return v[a] < v[b] })
		out[i] = v[len(v)/2]
	}
	return out
}
