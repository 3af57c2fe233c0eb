// Command dashboard measures what `multislice dashboard` costs at scale: a
// fleet of 64 v4 4x4x4 slices (1,024 hosts) and 64 JobSets of one slice
// each (1,024 pods). It reads the page's updates as a browser does
// (Server-Sent Events) and reports how soon a change reaches the page, how
// many updates a burst makes, and the dashboard process's CPU and memory
// while idle, while 64 JobSets start, and while JobSets come and go.
// Baseline in the same run: the same changes read from the API directly
// (a watch), so the page's own delay is the difference.
//
//	go run ./bench/dashboard -slices 64 -changes 20
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/testobj"
	"github.com/multislice/multislice/test/framework"
)

func main() {
	slices := flag.Int("slices", 64, "slices of 16 hosts, and JobSets of one slice (1..128)")
	changes := flag.Int("changes", 20, "JobSets submitted and deleted one at a time, each timed to the page (1..100)")
	bin := flag.String("bin", "bin", "directory with multislice and the control-plane binaries")
	flag.Parse()
	if *slices < 1 || *slices > 128 || *changes < 1 || *changes > 100 {
		fmt.Fprintln(os.Stderr, "-slices must be 1..128 and -changes 1..100")
		os.Exit(2)
	}
	if err := run(*bin, *slices, *changes); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(bin string, slices, changes int) error {
	c, err := framework.Up(bin, fmt.Sprintf("apiVersion: multislice.dev/v1alpha1\nkind: Fleet\ngroups:\n"+
		"- {name: big, accelerator: tpu-v4-podslice, topology: 4x4x4, slices: %d}\n", slices), nil)
	if err != nil {
		return err
	}
	defer c.Down()
	ctx := context.Background()

	dash := exec.Command(filepath.Join(c.Bin, "multislice"), "dashboard")
	dash.Env = append(os.Environ(), "MULTISLICE_HOME="+c.Home)
	stdout, err := dash.StdoutPipe()
	if err != nil {
		return err
	}
	began := time.Now()
	if err := dash.Start(); err != nil {
		return err
	}
	defer func() { _ = dash.Process.Kill(); _ = dash.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return fmt.Errorf("dashboard: %v", err)
	}
	url := strings.TrimSpace(strings.TrimPrefix(line, "dashboard: "))
	fmt.Printf("dashboard serving %s %.2fs after its start (caches synced, first page rendered)\n", url, time.Since(began).Seconds())
	page, err := subscribe(url + "events")
	if err != nil {
		return err
	}
	proc := process{pid: dash.Process.Pid}

	// Idle: 1,024 nodes heartbeating, nothing else.
	cpu := proc.cpu()
	time.Sleep(20 * time.Second)
	fmt.Printf("idle 20s: dashboard CPU %.2fs, RSS %d MiB, %d page updates, page %d KiB\n",
		(proc.cpu() - cpu).Seconds(), proc.rssMiB(), page.count(), len(page.latest())/1024)

	// Burst: 64 JobSets start (1,024 pods).
	cpu, n := proc.cpu(), page.count()
	start := time.Now()
	for i := range slices {
		if err := c.Objects.Create(ctx, jobSet(fmt.Sprintf("train-%02d", i))); err != nil {
			return err
		}
	}
	running := `data-running="16" data-workers="16"`
	shown, err := page.waitFor(10*time.Minute, func(s string) bool { return strings.Count(s, running) == slices })
	if err != nil {
		return fmt.Errorf("the page never showed %d JobSets with 16/16 workers Running: %v", slices, err)
	}
	fmt.Printf("burst: %d JobSets (%d pods) created -> the page shows every worker Running after %.2fs; %d page updates, dashboard CPU %.2fs, RSS %d MiB, page %d KiB\n",
		slices, slices*16, shown.Sub(start).Seconds(), page.count()-n, (proc.cpu() - cpu).Seconds(), proc.rssMiB(), len(page.latest())/1024)

	// Changes: a JobSet submitted (no pool is free: it waits in the queue)
	// and deleted, one at a time; the API watch is the baseline.
	wc, err := client.NewWithWatch(c.Config, client.Options{Scheme: c.Objects.Scheme()})
	if err != nil {
		return err
	}
	w, err := wc.Watch(ctx, &api.JobSetList{}, client.InNamespace("default"))
	if err != nil {
		return err
	}
	defer w.Stop()
	apiSeen := make(chan string, 100)
	go func() {
		for e := range w.ResultChan() {
			if e.Type == watch.Added || e.Type == watch.Deleted {
				if m, err := metaOf(e.Object); err == nil {
					apiSeen <- string(e.Type) + "/" + m
				}
			}
		}
	}()
	drain(apiSeen, 2*time.Second)
	cpu, n = proc.cpu(), page.count()
	var toPage, toAPI []time.Duration
	for i := range changes {
		name := fmt.Sprintf("extra-%02d", i)
		marker := fmt.Sprintf(`data-waiting="default/%s"`, name)
		for _, step := range []string{"ADDED", "DELETED"} {
			t0 := time.Now()
			var err error
			if step == "ADDED" {
				err = c.Objects.Create(ctx, jobSet(name))
			} else {
				err = c.Objects.Delete(ctx, jobSet(name), client.PropagationPolicy(metav1.DeletePropagationForeground))
			}
			if err != nil {
				return err
			}
			if err := awaitAPI(apiSeen, step+"/"+name); err != nil {
				return err
			}
			toAPI = append(toAPI, time.Since(t0))
			at, err := page.waitFor(30*time.Second, func(s string) bool { return strings.Contains(s, marker) == (step == "ADDED") })
			if err != nil {
				return fmt.Errorf("%s %s never reached the page: %v", step, name, err)
			}
			toPage = append(toPage, at.Sub(t0))
		}
	}
	fmt.Printf("changes: %d JobSets submitted to the queue and deleted (N=%d): on the page after median %s (min %s, max %s); baseline, seen by a watch: median %s (min %s, max %s); %d page updates, dashboard CPU %.2fs, RSS %d MiB\n",
		changes, len(toPage), median(toPage), minOf(toPage), maxOf(toPage), median(toAPI), minOf(toAPI), maxOf(toAPI),
		page.count()-n, (proc.cpu() - cpu).Seconds(), proc.rssMiB())
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("load average: %s", load)
	return nil
}

// page is the page as a browser holds it: the whole content, then each
// pushed section in place of its old rendering.
type page struct {
	mu       sync.Mutex
	order    []string          // section ids, in page order
	sections map[string]string // id -> HTML
	updates  int
	changed  chan struct{}
}

// sectionStart finds where each section of a whole page begins.
var sectionStart = regexp.MustCompile(`<section id="(summary|fleet|queue)"|<article id="([^"]+)"`)

func (p *page) apply(event, data string) {
	if event == "page" {
		p.order, p.sections = nil, map[string]string{}
		idx := sectionStart.FindAllStringSubmatchIndex(data, -1)
		for i, m := range idx {
			end := len(data)
			if i+1 < len(idx) {
				end = idx[i+1][0]
			}
			var id string
			if m[2] >= 0 {
				id = data[m[2]:m[3]] // summary, fleet or queue
			} else {
				id = data[m[4]:m[5]] // jobset/<namespace>/<name>
			}
			p.order = append(p.order, id)
			p.sections[id] = data[m[0]:end]
		}
		return
	}
	id, html, _ := strings.Cut(data, "\n")
	p.sections[id] = html
}

func subscribe(url string) (*page, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	p := &page{changed: make(chan struct{}), sections: map[string]string{}}
	first := make(chan struct{})
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		var event string
		var data []string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				data = append(data, line[len("data: "):])
			case line == "" && data != nil:
				p.mu.Lock()
				p.apply(event, strings.Join(data, "\n"))
				p.updates++
				close(p.changed)
				p.changed = make(chan struct{})
				if p.updates == 1 {
					close(first)
				}
				p.mu.Unlock()
				data = nil
			}
		}
	}()
	select {
	case <-first:
		return p, nil
	case <-time.After(30 * time.Second):
		return nil, fmt.Errorf("no page from %s", url)
	}
}

func (p *page) latest() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.content()
}

// content is the page as the browser shows it (the caller holds mu).
func (p *page) content() string {
	var b strings.Builder
	for _, id := range p.order {
		b.WriteString(p.sections[id])
	}
	return b.String()
}
func (p *page) count() int { p.mu.Lock(); defer p.mu.Unlock(); return p.updates }

// waitFor returns when the page first satisfied ok.
func (p *page) waitFor(timeout time.Duration, ok func(string) bool) (time.Time, error) {
	deadline := time.After(timeout)
	for {
		p.mu.Lock()
		content, changed := p.content(), p.changed
		p.mu.Unlock()
		if ok(content) {
			return time.Now(), nil
		}
		select {
		case <-changed:
		case <-deadline:
			return time.Time{}, fmt.Errorf("timed out after %s", timeout)
		}
	}
}

// process reads one process's CPU time and memory from /proc.
type process struct{ pid int }

func (p process) cpu() time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid))
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	utime, _ := strconv.Atoi(fields[11])
	stime, _ := strconv.Atoi(fields[12])
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

func (p process) rssMiB() int {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid))
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			kb, _ := strconv.Atoi(strings.Fields(l)[1])
			return kb / 1024
		}
	}
	return 0
}

func metaOf(obj any) (string, error) {
	type named interface{ GetName() string }
	if n, ok := obj.(named); ok {
		return n.GetName(), nil
	}
	return "", fmt.Errorf("%T has no name", obj)
}

func awaitAPI(seen chan string, want string) error {
	deadline := time.After(30 * time.Second)
	for {
		select {
		case got := <-seen:
			if got == want {
				return nil
			}
		case <-deadline:
			return fmt.Errorf("the watch never saw %s", want)
		}
	}
}

func drain(ch chan string, quiet time.Duration) {
	for {
		select {
		case <-ch:
		case <-time.After(quiet):
			return
		}
	}
}

func jobSet(name string) *api.JobSet {
	return &api.JobSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
			Annotations: map[string]string{api.ExclusiveKey: gke.NodePoolLabel}},
		Spec: api.JobSetSpec{
			FailurePolicy: &api.FailurePolicy{MaxRestarts: 3},
			ReplicatedJobs: []api.ReplicatedJob{{Name: "slice", Replicas: 1, Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
				CompletionMode: ptr.To(batchv1.IndexedCompletion), Parallelism: ptr.To(int32(16)), Completions: ptr.To(int32(16)),
				BackoffLimit: ptr.To(int32(0)),
				Template:     corev1.PodTemplateSpec{Spec: testobj.TPUPod("python:3.12", "tpu-v4-podslice", "4x4x4", "4")},
			}}}},
		},
	}
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2].Round(time.Millisecond)
}

func minOf(d []time.Duration) time.Duration {
	m := d[0]
	for _, x := range d {
		m = min(m, x)
	}
	return m.Round(time.Millisecond)
}

func maxOf(d []time.Duration) time.Duration {
	m := d[0]
	for _, x := range d {
		m = max(m, x)
	}
	return m.Round(time.Millisecond)
}
