// Command restart measures a restart at scale on a local cluster: one
// JobSet of 64 slices x 16 hosts (1,024 pods, v4 4x4x4); one pod fails; how
// long until every pod runs again at the next attempt. Recreate (every pod
// deleted and created anew) and InPlaceRestart (KEP-467: pods restart in
// place through the agents) run interleaved on one cluster, rounds times.
// In-place is split into detection (the failed pod's agent reports the next
// attempt), signal fan-out (every pod reports it) and barrier release
// (every worker started, as the pods' status reports it); the moment the
// controller lifts the barrier (declares the attempt current, which the
// agents act on at once) is reported too. Each restart's API-server writes
// are counted.
//
//	go run ./bench/restart -slices 64 -rounds 3
//
// Restart-all throughput (pods per second from the fault to every pod
// Running at the next attempt) against the floor of the same cluster
// creating the same pods without the manager (kind create), and against
// the same restart made by hand without the manager (kind by-hand: the
// Jobs deleted and created again; what recreate adds to it is the
// manager's):
//
//	go run ./bench/restart -slices 320 -rounds 3 -kinds recreate,by-hand,create
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/agent"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/testobj"
	"github.com/multislice/multislice/test/framework"
)

func main() {
	slices := flag.Int("slices", 64, "slices of 16 hosts (1..320)")
	rounds := flag.Int("rounds", 3, "restarts of each kind (1..20)")
	kinds := flag.String("kinds", "recreate,in-place,floor", "restarts run in each round, in this order: recreate, in-place, floor (in place without a controller), create (the pods created without a controller), by-hand (recreate without a controller)")
	bin := flag.String("bin", "bin", "directory with multislice and the control-plane binaries")
	audit := flag.Bool("audit", false, "log the API server's writes and say who sent them in each restart (adds a little to each write: times are not figures of record)")
	flag.Parse()
	if *slices < 1 || *slices > 320 || *rounds < 1 || *rounds > 20 {
		fmt.Fprintln(os.Stderr, "-slices must be 1..320 and -rounds 1..20")
		os.Exit(2)
	}
	order := strings.Split(*kinds, ",")
	for _, k := range order {
		if k != "recreate" && k != "in-place" && k != "floor" && k != "create" && k != "by-hand" {
			fmt.Fprintf(os.Stderr, "-kinds: unknown kind %q (want recreate, in-place, floor, create or by-hand)\n", k)
			os.Exit(2)
		}
	}
	if err := run(*bin, *slices, *rounds, order, *audit); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// managerProcess is the manager's name among the local cluster's processes.
const managerProcess = "multislice-manager"

type result struct {
	total, detect, fanOut, release time.Duration
	// lifted: the controller declared the attempt current (the agents
	// lift their barriers on seeing it), from the failure.
	lifted time.Duration
	// gone and created, of a recreate or its floor: every pod of the
	// previous attempt gone, every pod of the next one created.
	gone, created time.Duration
	writes        map[string]int
	// senders are the writes by who sent them (with -audit).
	senders map[string]int
	cpu     string
	// manager is the manager's CPU during the restart.
	manager time.Duration
}

func run(bin string, slices, rounds int, kinds []string, withAudit bool) error {
	// It measures a pod's failure: slice health off, since at 5,120
	// simulated hosts on two cores kwok's nodes flap NotReady under load,
	// and slice health would restart the JobSet for it. Arguments in
	// $MULTISLICE_MANAGER_ARGS are kept.
	env := []string{"MULTISLICE_MANAGER_ARGS=--no-slice-health " + os.Getenv("MULTISLICE_MANAGER_ARGS")}
	var audit *framework.Audit
	if withAudit {
		dir, err := os.MkdirTemp("", "multislice-audit-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if audit, err = framework.NewAudit(dir); err != nil {
			return err
		}
		env = append(env, audit.Env())
	}
	// 320 slices are 5,120 hosts, past a fleet's default limit of 5,000.
	c, err := framework.Up(bin, fmt.Sprintf("apiVersion: multislice.dev/v1alpha1\nkind: Fleet\ngroups:\n"+
		"- {name: big, accelerator: tpu-v4-podslice, topology: 4x4x4, slices: %d}\nlimits: {nodes: %d}\n", slices, slices*16), env, "--feature-gates=InPlaceRestart=true")
	if err != nil {
		return err
	}
	defer c.Down()
	c.Audit = audit
	pods := slices * 16
	byKind := map[string][]result{}
	for r := 0; r < rounds; r++ {
		for _, kind := range kinds {
			name := fmt.Sprintf("%s-%d", kind, r)
			var res result
			var err error
			switch kind {
			case "floor":
				res, err = floorRound(c, slices, name)
			case "create":
				res, err = createRound(c, slices, name)
			case "by-hand":
				res, err = byHandRound(c, slices, name)
			default:
				res, err = round(c, slices, kind == "in-place", name)
			}
			if err != nil {
				return fmt.Errorf("round %d %s: %w", r+1, kind, err)
			}
			byKind[kind] = append(byKind[kind], res)
			fmt.Printf("round %d %-8s %d pods: all Running at the next attempt %.2fs after the failure (%.0f pods/s)", r+1, kind, pods, res.total.Seconds(), float64(pods)/res.total.Seconds())
			if kind == "in-place" || kind == "floor" {
				fmt.Printf(" (detection %.2fs, signal fan-out %.2fs, barrier release %.2fs; barrier lifted %.2fs after the failure)",
					res.detect.Seconds(), res.fanOut.Seconds(), res.release.Seconds(), res.lifted.Seconds())
			}
			if kind == "recreate" || kind == "create" || kind == "by-hand" {
				fmt.Printf(" (previous pods gone %.2fs, next pods created %.2fs)", res.gone.Seconds(), res.created.Seconds())
			}
			rss, peak := c.RSS(managerProcess)
			fmt.Printf("; API writes: %s; CPU: %s; manager RSS %d MiB (peak %d MiB)\n", writes(res.writes), res.cpu, rss>>20, peak>>20)
			if res.senders != nil {
				fmt.Printf("  who wrote: %s\n", framework.AuditText(res.senders))
			}
		}
	}
	fmt.Printf("median of %d:", rounds)
	for _, kind := range kinds {
		m := medianOf(byKind[kind])
		fmt.Printf(" %s %.2fs, %.0f pods/s (manager CPU %.2fs)", kind, m.total.Seconds(), float64(pods)/m.total.Seconds(), m.manager.Seconds())
		if kind == "in-place" || kind == "floor" {
			fmt.Printf(" [detection %.2fs, fan-out %.2fs, release %.2fs; barrier lifted at %.2fs]",
				m.detect.Seconds(), m.fanOut.Seconds(), m.release.Seconds(), m.lifted.Seconds())
		}
		if kind == "recreate" || kind == "create" || kind == "by-hand" {
			fmt.Printf(" [gone %.2fs, created %.2fs]", m.gone.Seconds(), m.created.Seconds())
		}
		fmt.Print(";")
	}
	fmt.Println()
	for _, pair := range [][2]string{{"in-place", "floor"}, {"in-place", "recreate"}, {"recreate", "create"}, {"recreate", "by-hand"}, {"by-hand", "create"}} {
		a, b := byKind[pair[0]], byKind[pair[1]]
		if len(a) == 0 || len(b) == 0 {
			continue
		}
		fmt.Printf("%s / %s: median %.2fx, per round", pair[0], pair[1], medianOf(a).total.Seconds()/medianOf(b).total.Seconds())
		for i := range a {
			fmt.Printf(" %.2f", a[i].total.Seconds()/b[i].total.Seconds())
		}
		fmt.Println()
	}
	return nil
}

// round runs one JobSet: start, one pod fails, measure, delete.
func round(c *framework.Cluster, slices int, inPlace bool, name string) (result, error) {
	ctx := context.Background()
	pods := slices * 16
	js := jobSet(name, slices, inPlace)
	if err := c.Objects.Create(ctx, js); err != nil {
		return result{}, err
	}
	w := watchPods(c.Client, name, pods)
	defer deleteAll(ctx, c, []client.Object{js}, w)
	if _, err := w.waitFor(pods, func(p *corev1.Pod) bool { return ready(p, inPlace, "0", "0") }); err != nil {
		return result{}, err
	}
	time.Sleep(2 * time.Second) // settle: status writes of the start are done
	m, err := startMeter(ctx, c)
	if err != nil {
		return result{}, err
	}
	began := time.Now() // includes starting the chaos command: a little conservative
	if out, err := c.Run("chaos", "fail-pod", "--nodepool", fmt.Sprintf("big-np-%d", slices/2)); err != nil {
		return result{}, fmt.Errorf("chaos: %v\n%s", err, out)
	}
	var res result
	at := func(want int, ok func(*corev1.Pod) bool) (time.Duration, error) {
		_, err := w.waitFor(want, ok)
		return time.Since(began), err
	}
	if !inPlace {
		if err := w.recreated(pods, began, &res); err != nil {
			return res, err
		}
	} else {
		lifted := make(chan time.Duration, 1)
		go func() { lifted <- untilCurrent(c.Config, js, 1, began, w.patience) }()
		if res.detect, err = at(1, func(p *corev1.Pod) bool { return attempt(p) == "1" }); err != nil {
			return res, err
		}
		all, err := at(pods, func(p *corev1.Pod) bool { return attempt(p) == "1" })
		if err != nil {
			return res, err
		}
		if res.total, err = at(pods, func(p *corev1.Pod) bool { return ready(p, true, "0", "1") }); err != nil {
			return res, err
		}
		res.fanOut, res.release = all-res.detect, res.total-all
		res.lifted = <-lifted
	}
	return res, m.stop(ctx, c, &res)
}

// meter reads what a restart costs: the components' CPU and the API
// server's writes from its start.
type meter struct {
	cpu    map[string]time.Duration
	writes map[string]int
	audit  int64 // the audit log's end
}

func startMeter(ctx context.Context, c *framework.Cluster) (meter, error) {
	m := meter{cpu: c.CPU()}
	if c.Audit != nil {
		m.audit = c.Audit.Offset()
	}
	var err error
	m.writes, err = c.Writes(ctx)
	return m, err
}

// stop writes into res what the restart cost since startMeter.
func (m meter) stop(ctx context.Context, c *framework.Cluster, res *result) error {
	after, err := c.Writes(ctx)
	if err != nil {
		return err
	}
	res.cpu = c.CPUSince(m.cpu)
	res.manager = c.CPU()[managerProcess] - m.cpu[managerProcess]
	// Heartbeats and events are not the restart's work.
	_, res.writes = framework.WritesSince(m.writes, after, func(resource string) bool { return resource == "leases" || resource == "events" })
	if c.Audit != nil {
		res.senders, err = c.Audit.Since(m.audit)
	}
	return err
}

// untilCurrent watches the JobSet until its current in-place attempt is
// attempt, and returns the time since began (0: not within patience).
// A watch, not polling: the bench must not add load to what it measures.
func untilCurrent(cfg *rest.Config, js *api.JobSet, attempt int32, began time.Time, patience time.Duration) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	scheme := runtime.NewScheme()
	_ = api.AddToScheme(scheme)
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return 0
	}
	w, err := c.Watch(ctx, &api.JobSetList{}, client.InNamespace(js.Namespace),
		client.MatchingFields{"metadata.name": js.Name})
	if err != nil {
		return 0
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if now, ok := ev.Object.(*api.JobSet); ok && ptr.Deref(now.Status.CurrentInPlaceRestartAttempt, -1) == attempt {
			return time.Since(began)
		}
	}
	return 0
}

// ready: Running (Ready, for in-place: the workers started) at the given
// recreate attempt and in-place attempt ("" for any).
func ready(p *corev1.Pod, inPlace bool, restarts, inPlaceAttempt string) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || p.Labels[api.RestartsKey] != restarts && restarts != "" {
		return false
	}
	if !inPlace {
		return true
	}
	if inPlaceAttempt != "" && attempt(p) != inPlaceAttempt {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func attempt(p *corev1.Pod) string { return p.Annotations[api.InPlaceRestartAttemptKey] }

// podWatch follows one JobSet's pods through a watch: polling LISTs of
// 1,024 pods would cost the API server more than the restart it measures.
type podWatch struct {
	store toolscache.Store
	stop  chan struct{}
	// patience is how long a wait on these pods may last.
	patience time.Duration
}

func watchPods(cs kubernetes.Interface, name string, pods int) *podWatch {
	store, stop := watchLabelled(cs, name, func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
		return f.Core().V1().Pods().Informer()
	})
	return &podWatch{store: store, stop: stop, patience: framework.Patience(pods)}
}

// watchLabelled starts the informer kind picks, of the objects labelled
// with the JobSet name name, and returns its synced store and the channel
// that stops it.
func watchLabelled(cs kubernetes.Interface, name string, kind func(informers.SharedInformerFactory) toolscache.SharedIndexInformer) (toolscache.Store, chan struct{}) {
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("default"),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = api.JobSetNameKey + "=" + name }))
	inf := kind(f)
	stop := make(chan struct{})
	f.Start(stop)
	f.WaitForCacheSync(stop)
	return inf.GetStore(), stop
}

// pods are the watch's pods (read-only: the watch's cache).
func (w *podWatch) pods() []*corev1.Pod {
	var out []*corev1.Pod
	for _, o := range w.store.List() {
		out = append(out, o.(*corev1.Pod))
	}
	return out
}

// running are the pods Running and not going away.
func (w *podWatch) running() []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range w.pods() {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

func (w *podWatch) count(ok func(*corev1.Pod) bool) int {
	n := 0
	for _, o := range w.store.List() {
		if ok(o.(*corev1.Pod)) {
			n++
		}
	}
	return n
}

// recreated waits through the three phases of a recreate from attempt 0
// to 1 that began at began, and writes into res when each ended: every
// pod of attempt 0 gone (the Jobs' foreground deletion ends with them),
// all pods of attempt 1 created, all Running.
func (w *podWatch) recreated(pods int, began time.Time, res *result) error {
	if _, err := w.until(func() bool { return w.count(func(p *corev1.Pod) bool { return p.Labels[api.RestartsKey] == "0" }) == 0 }); err != nil {
		return err
	}
	res.gone = time.Since(began)
	if _, err := w.waitFor(pods, func(p *corev1.Pod) bool { return p.Labels[api.RestartsKey] == "1" }); err != nil {
		return err
	}
	res.created = time.Since(began)
	if _, err := w.waitFor(pods, func(p *corev1.Pod) bool { return ready(p, false, "1", "") }); err != nil {
		return err
	}
	res.total = time.Since(began)
	return nil
}

// waitFor waits until want pods pass ok, and returns how long that took.
func (w *podWatch) waitFor(want int, ok func(*corev1.Pod) bool) (time.Duration, error) {
	d, err := w.until(func() bool { return w.count(ok) >= want })
	if err != nil {
		return 0, fmt.Errorf("fewer than %d pods got there in %s", want, w.patience)
	}
	return d, nil
}

// until waits (at most w.patience) until done, and returns how long that
// took.
func (w *podWatch) until(done func() bool) (time.Duration, error) {
	began := time.Now()
	for time.Since(began) < w.patience {
		if done() {
			return time.Since(began), nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return 0, fmt.Errorf("not done in %s", w.patience)
}

func writes(m map[string]int) string {
	keys := make([]string, 0, len(m))
	total := 0
	for k, v := range m {
		keys = append(keys, k)
		total += v
	}
	sort.Strings(keys)
	parts := []string{fmt.Sprintf("%d in all", total)}
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func medianOf(rs []result) result {
	pick := func(f func(result) time.Duration) time.Duration {
		v := make([]time.Duration, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
		return v[len(v)/2]
	}
	return result{
		total:   pick(func(r result) time.Duration { return r.total }),
		detect:  pick(func(r result) time.Duration { return r.detect }),
		fanOut:  pick(func(r result) time.Duration { return r.fanOut }),
		release: pick(func(r result) time.Duration { return r.release }),
		lifted:  pick(func(r result) time.Duration { return r.lifted }),
		gone:    pick(func(r result) time.Duration { return r.gone }),
		created: pick(func(r result) time.Duration { return r.created }),
		manager: pick(func(r result) time.Duration { return r.manager }),
	}
}

// jobSet is the benchmark's JobSet: one replicated job of slices v4 4x4x4
// slices (16 hosts each), recreated on a restart, or restarted in place
// with the agent as a sidecar.
func jobSet(name string, slices int, inPlace bool) *api.JobSet {
	spec := batchv1.JobSpec{
		CompletionMode: ptr.To(batchv1.IndexedCompletion), Parallelism: ptr.To(int32(16)), Completions: ptr.To(int32(16)),
		BackoffLimit: ptr.To(int32(0)),
		Template:     corev1.PodTemplateSpec{Spec: testobj.TPUPod("python:3.12", "tpu-v4-podslice", "4x4x4", "4")},
	}
	framework.TolerateNodeOutages(&spec.Template.Spec) // the round's one failure is the bench's
	js := &api.JobSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
			Annotations: map[string]string{api.ExclusiveKey: gke.NodePoolLabel}},
		Spec: api.JobSetSpec{
			FailurePolicy: &api.FailurePolicy{MaxRestarts: 5},
			ReplicatedJobs: []api.ReplicatedJob{{Name: "slice", Replicas: int32(slices),
				Template: batchv1.JobTemplateSpec{Spec: spec}}},
		},
	}
	if inPlace {
		framework.InPlace(js, agent.ContainerName)
	}
	return js
}
