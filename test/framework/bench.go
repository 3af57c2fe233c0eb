package framework

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/multislice/multislice/internal/localcluster"
)

// Up starts a cluster for a benchmark program: `multislice up upArgs...`
// with the binaries in bin; fleet, when not empty, is written to a file and
// passed with --fleet. Call Down after.
func Up(bin, fleet string, env []string, upArgs ...string) (*Cluster, error) {
	abs, err := filepath.Abs(bin)
	if err != nil {
		return nil, err
	}
	home, err := os.MkdirTemp("", "multislice-bench-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Home: home, Bin: abs, Env: env}
	args := append([]string{"up"}, upArgs...)
	if fleet != "" {
		path := filepath.Join(home, "fleet.yaml")
		if err := os.WriteFile(path, []byte(fleet), 0o644); err != nil {
			return nil, err
		}
		args = append(args, "--fleet", path)
	}
	if out, err := c.Run(args...); err != nil {
		c.Down()
		return nil, fmt.Errorf("up: %v\n%s", err, out)
	}
	if err := c.connect(1000, 2000); err != nil {
		c.Down()
		return nil, err
	}
	c.downOnSignal()
	return c, nil
}

// downOnSignal takes the cluster down when the benchmark is stopped
// (Ctrl-C, SIGTERM), then exits as the signal would have: left running, a
// cluster of thousands of simulated hosts would keep the machine busy after
// its benchmark. A Down elsewhere meanwhile (the benchmark failing as its
// cluster goes) waits for that exit. Down ends the handler, so that a
// benchmark that starts cluster after cluster leaves no handler of a
// cluster already down to exit before the current one is down.
func (c *Cluster) downOnSignal() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	down := make(chan struct{})
	c.stopSignals = sync.OnceFunc(func() { signal.Stop(sig); close(down) })
	go func() {
		select {
		case s := <-sig:
			c.downMu.Lock() // held until the exit
			fmt.Fprintf(os.Stderr, "%v: taking the cluster in %s down\n", s, c.Home)
			c.down()
			os.Exit(128 + int(s.(syscall.Signal)))
		case <-down:
		}
	}()
}

// Down stops the cluster and removes its home.
func (c *Cluster) Down() {
	c.downMu.Lock()
	defer c.downMu.Unlock()
	c.down()
}

func (c *Cluster) down() {
	if c.stopSignals != nil {
		c.stopSignals()
	}
	_, _ = c.Run("down")
	_ = os.RemoveAll(c.Home)
}

// CPU returns the CPU time each component of the cluster has used so far,
// by component name; the difference of two calls shows who did the work.
func (c *Cluster) CPU() map[string]time.Duration {
	out := map[string]time.Duration{}
	state, err := localcluster.Home(c.Home).ReadState()
	if err != nil || state == nil {
		return out
	}
	for _, p := range state.Processes {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.PID))
		if err != nil {
			continue
		}
		// Fields after the command name (which may hold spaces): utime and
		// stime are the 12th and 13th, in clock ticks (100 per second).
		fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
		if len(fields) < 13 {
			continue
		}
		utime, _ := strconv.Atoi(fields[11])
		stime, _ := strconv.Atoi(fields[12])
		out[p.Name] = time.Duration(utime+stime) * 10 * time.Millisecond
	}
	return out
}

// RSS returns a component's resident memory now and its peak so far
// (VmRSS and VmHWM), 0 when it is not running.
func (c *Cluster) RSS(name string) (now, peak int64) {
	p, ok := c.process(name)
	if !ok {
		return 0, 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.PID))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		kib, _ := strconv.ParseInt(fields[1], 10, 64)
		switch fields[0] {
		case "VmRSS:":
			now = kib << 10
		case "VmHWM:":
			peak = kib << 10
		}
	}
	return now, peak
}

// process is the cluster's recorded process of that name (the last
// started, as a restarted component is recorded again).
func (c *Cluster) process(name string) (localcluster.Process, bool) {
	state, err := localcluster.Home(c.Home).ReadState()
	if err != nil || state == nil {
		return localcluster.Process{}, false
	}
	for i := len(state.Processes) - 1; i >= 0; i-- {
		if state.Processes[i].Name == name {
			return state.Processes[i], true
		}
	}
	return localcluster.Process{}, false
}

// StatusWrites returns the manager's JobSet status writes so far, by what
// each changed (multislice_jobset_status_writes_total), read from the
// metrics endpoint its arguments name; nil when it serves none.
func (c *Cluster) StatusWrites(ctx context.Context) (map[string]int, error) {
	p, _ := c.process("multislice-manager")
	addr := ""
	for _, a := range p.Args {
		if v, ok := strings.CutPrefix(a, "--metrics-bind-address="); ok {
			addr = v // the last one, as the manager's flags read them
		}
	}
	if addr == "" || addr == "0" {
		return nil, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read the manager's metrics: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read the manager's metrics: %w", err)
	}
	out := map[string]int{}
	for _, s := range samples(body, "multislice_jobset_status_writes_total") {
		out[s.labels["changed"]] += int(s.value)
	}
	return out, nil
}

// sample is one line of a Prometheus text exposition: its labels and value.
type sample struct {
	labels map[string]string
	value  float64
}

// samples are the lines of metric in body. Label values are taken as
// written between their quotes: those read here hold no comma or escape.
func samples(body []byte, metric string) []sample {
	var out []sample
	for _, line := range strings.Split(string(body), "\n") {
		rest, ok := strings.CutPrefix(line, metric+"{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		n, err := strconv.ParseFloat(value, 64)
		if !ok || err != nil {
			continue
		}
		l := map[string]string{}
		for _, kv := range strings.Split(labels, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				l[k] = strings.Trim(v, `"`)
			}
		}
		out = append(out, sample{l, n})
	}
	return out
}

// CPUSince formats the CPU each component used since before, busiest first.
func (c *Cluster) CPUSince(before map[string]time.Duration) string {
	type use struct {
		name string
		d    time.Duration
	}
	var uses []use
	for name, d := range c.CPU() {
		uses = append(uses, use{name, d - before[name]})
	}
	sort.Slice(uses, func(i, j int) bool { return uses[i].d > uses[j].d })
	var parts []string
	for _, u := range uses {
		parts = append(parts, fmt.Sprintf("%s %.1fs", u.name, u.d.Seconds()))
	}
	return strings.Join(parts, ", ")
}

// LoadAverage is the machine's 1, 5 and 15 minute load averages, for
// benches to print beside their figures.
func LoadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// writeVerbs name the API server's verbs that change something.
var writeVerbs = map[string]string{"POST": "create", "PUT": "update", "PATCH": "patch", "APPLY": "apply", "DELETE": "delete", "DELETECOLLECTION": "deletecollection"}

// Writes returns the write requests the API server has served so far, by
// verb and resource ("update jobsets/status", "create events", "patch
// pods/status"), those it refused apart, by code ("delete pods 404"),
// from its own request counter (apiserver_request_total); the difference
// of two calls (WritesSince) counts the writes between them, whoever made
// them.
func (c *Cluster) Writes(ctx context.Context) (map[string]int, error) {
	body, err := c.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the API server's metrics: %w", err)
	}
	out := map[string]int{}
	for _, s := range samples(body, "apiserver_request_total") {
		l := s.labels
		verb := writeVerbs[l["verb"]]
		if verb == "" {
			continue
		}
		resource := l["resource"]
		if l["subresource"] != "" {
			resource += "/" + l["subresource"]
		}
		key := verb + " " + resource
		if code := l["code"]; !strings.HasPrefix(code, "2") {
			key += " " + code
		}
		out[key] += int(s.value)
	}
	return out, nil
}

// PodWrites is how many writes to pods (pods and their subresources,
// refused ones too) the API server has served so far.
func (c *Cluster) PodWrites(ctx context.Context) (int, error) {
	writes, err := c.Writes(ctx)
	n, _ := WritesSince(nil, writes, func(resource string) bool {
		return resource != "pods" && !strings.HasPrefix(resource, "pods/")
	})
	return n, err
}

// WaitStill reads count every second until it has not moved for still,
// limit at most, and says whether it did stop moving. A count it cannot
// read ends the wait.
func WaitStill(ctx context.Context, count func(context.Context) (int, error), still, limit time.Duration) bool {
	last, since := -1, time.Now()
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); {
		time.Sleep(time.Second)
		n, err := count(ctx)
		switch {
		case err != nil:
			return false
		case n != last:
			last, since = n, time.Now()
		case time.Since(since) >= still:
			return true
		}
	}
	return false
}

// WritesSince is what Writes counted since before, without what skip
// says is not the work measured (e.g. the nodes' heartbeats).
func WritesSince(before, after map[string]int, skip func(resource string) bool) (total int, by map[string]int) {
	by = map[string]int{}
	for k, n := range after {
		// A key is "verb resource[ code]"; a request for no resource
		// (a path such as /healthz) has an empty one.
		_, resource, _ := strings.Cut(k, " ")
		resource, _, _ = strings.Cut(resource, " ")
		if d := n - before[k]; d > 0 && (skip == nil || !skip(resource)) {
			by[k] = d
			total += d
		}
	}
	return total, by
}

// CreateAll creates the objects, workers at a time (a benchmark's
// submission: all at once, as a controller creates its children), and
// returns every error.
func CreateAll[T client.Object](ctx context.Context, c client.Client, objs []T, workers int) error {
	errs := make([]error, len(objs))
	workqueue.ParallelizeUntil(ctx, max(workers, 1), len(objs), func(i int) {
		errs[i] = c.Create(ctx, objs[i])
	})
	return errors.Join(errs...)
}

// TolerateNodeOutages keeps a benchmark's pods on their nodes through
// NotReady spells: past a few thousand simulated hosts on two cores, kwok
// falls behind on its nodes' leases under load, and the node lifecycle
// controller would evict pods after 5 minutes, failing a round that
// measures something else.
func TolerateNodeOutages(spec *corev1.PodSpec) {
	for _, taint := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		spec.Tolerations = append(spec.Tolerations,
			corev1.Toleration{Key: taint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute})
	}
}

// RemovePods deletes the pods with no grace period, workers at once, as a
// bench's cleanup between rounds: a collection delete of thousands of pods
// runs on one worker in the API server and is cut off after a minute.
func RemovePods(ctx context.Context, c client.Client, pods []*corev1.Pod, workers int) error {
	errs := make([]error, len(pods))
	workqueue.ParallelizeUntil(ctx, max(workers, 1), len(pods), func(i int) {
		errs[i] = client.IgnoreNotFound(c.Delete(ctx, pods[i], client.GracePeriodSeconds(0)))
	})
	return errors.Join(errs...)
}

// Patience is how long a benchmark waits for its pods: 10 minutes, or
// 500 ms a pod where that is longer. On two cores a restart of 2,048 pods
// took 0.14 s a pod, and a placement round of 4,800 pods 0.22 s a pod on a
// fast day and more than 0.25 s on a slow one (cut off at 20 minutes).
func Patience(pods int) time.Duration {
	return max(10*time.Minute, time.Duration(pods)*500*time.Millisecond)
}
