package dashboard

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/controller/slicecheck"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/objcache"
	"github.com/multislice/multislice/internal/view"
)

//go:embed assets
var assets embed.FS

var tmpl = template.Must(template.New("").Funcs(template.FuncMap{
	"hostStates": func() []string {
		return []string{view.HostHeld, view.HostSpare, view.HostNotReady, view.HostMaintenance, view.HostRepairing, view.HostMissing, view.HostReady}
	},
	"clock":   func(t time.Time) string { return t.Local().Format("15:04:05") },
	"seconds": func(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) },
	"deref":   func(p *int32) int32 { return *p },
	"recent":  func(e []view.Entry) []view.Entry { return e[max(0, len(e)-20):] },
}).ParseFS(assets, "assets/page.html"))

var (
	style, _  = assets.ReadFile("assets/style.css")
	script, _ = assets.ReadFile("assets/app.js")
)

func init() {
	// CSS and the script are ours, embedded: no network at run time.
	template.Must(tmpl.New("style").Parse(string(style)))
	template.Must(tmpl.New("script").Parse(string(script)))
}

// Server keeps the page current from watches and serves it.
type Server struct {
	Config *rest.Config
	// Cache, when set, is a started cache with objcache's options (the
	// manager's): the page reads it instead of watching the cluster again.
	Cache cache.Cache
	// Coalesce gathers the changes of a burst into one update (default
	// 200 ms): a restart of 1,000 pods is a few updates, not thousands.
	Coalesce time.Duration
	Log      io.Writer
	// GroupLabel names a node's multislice group ("": MultisliceGroup).
	GroupLabel string

	cache   cache.Cache
	kueue   bool // Kueue's Workloads are served and watched
	changed chan struct{}

	render renderer // used by refresh only

	mu       sync.Mutex
	page     Page
	sections []versioned
	layout   uint64        // version of the last change of the section list
	version  uint64        // the latest version of any section
	waiters  chan struct{} // closed and replaced on every new version
}

// Start builds the caches (nodes, JobSets and their Jobs, pods and
// Events), unless given the manager's, and keeps the page current until
// ctx ends. It returns once the first page is rendered.
func (s *Server) Start(ctx context.Context) error {
	if s.Coalesce == 0 {
		s.Coalesce = 200 * time.Millisecond
	}
	if s.Log == nil {
		s.Log = io.Discard
	}
	s.cache = s.Cache
	own := s.cache == nil
	if own {
		cfg := rest.CopyConfig(s.Config)
		cfg.Wrap(objcache.SlimPodWatches) // as the manager's cache receives pods
		var err error
		if s.cache, err = cache.New(cfg, objcache.Options()); err != nil {
			return err
		}
	}
	s.changed = make(chan struct{}, 1)
	s.waiters = make(chan struct{})
	poke := func(any) {
		select {
		case s.changed <- struct{}{}:
		default:
		}
	}
	watched := []client.Object{&corev1.Node{}, &api.JobSet{}, &batchv1.Job{}, &corev1.Pod{}, &corev1.Event{}, &schedulingv1.PriorityClass{}}
	// Kueue's Workloads only where Kueue is served: a cache cannot watch
	// a kind the API server does not serve.
	s.kueue = servesKueue(s.Config)
	if s.kueue {
		w := &unstructured.Unstructured{}
		w.SetGroupVersionKind(slicecheck.WorkloadKind)
		watched = append(watched, w)
	}
	for _, obj := range watched {
		inf, err := s.cache.GetInformer(ctx, obj)
		if err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: poke, DeleteFunc: poke,
			UpdateFunc: func(old, o any) {
				if shown(old) != shown(o) {
					poke(o)
				}
			}}); err != nil {
			return err
		}
	}
	if own {
		go func() { _ = s.cache.Start(ctx) }()
	}
	// Bounded: an identity that may not list and watch what the page shows
	// gets an error that says so, not a page that never comes.
	syncCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if !s.cache.WaitForCacheSync(syncCtx) {
		return fmt.Errorf("dashboard: the caches did not sync within 2m (%v): the identity must be able to list and watch nodes, pods, jobs, jobsets, events and priorityclasses", syncCtx.Err())
	}
	if err := s.refresh(ctx); err != nil {
		return err
	}
	go s.loop(ctx)
	return nil
}

// loop re-renders on a change at once, then at most once per Coalesce
// while changes keep coming (a burst is a few updates, not thousands), and
// every 30 s for the ages on the page.
func (s *Server) loop(ctx context.Context) {
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.changed:
		case <-tick.C:
		}
		if wait := s.Coalesce - time.Since(last); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		select { // the changes up to now are in this update
		case <-s.changed:
		default:
		}
		last = time.Now()
		if err := s.refresh(ctx); err != nil && ctx.Err() == nil {
			fmt.Fprintf(s.Log, "dashboard: %v\n", err)
		}
	}
}

// refresh renders the page from the caches and wakes the browsers if
// any section changed.
func (s *Server) refresh(ctx context.Context) error {
	var nodes corev1.NodeList
	var jobsets api.JobSetList
	var jobs batchv1.JobList
	var pods corev1.PodList
	var events corev1.EventList
	var classes schedulingv1.PriorityClassList
	workloads := &unstructured.UnstructuredList{}
	workloads.SetGroupVersionKind(slicecheck.WorkloadKind.GroupVersion().WithKind(slicecheck.WorkloadKind.Kind + "List"))
	// Nodes and pods are kept slim (objcache.Node, objcache.Pod) and come
	// out of the cache as copies; the rest are the cache's own objects,
	// only read.
	for _, l := range []client.ObjectList{&nodes, &pods} {
		if err := s.cache.List(ctx, l); err != nil {
			return err
		}
	}
	shared := []client.ObjectList{&jobsets, &jobs, &events, &classes}
	if s.kueue {
		shared = append(shared, workloads)
	}
	for _, l := range shared {
		if err := s.cache.List(ctx, l, client.UnsafeDisableDeepCopy); err != nil {
			return err
		}
	}
	page := Build(Snapshot{Nodes: nodes.Items, JobSets: jobsets.Items, Jobs: jobs.Items, Pods: pods.Items, Events: events.Items,
		PriorityClasses: classes.Items, KueueWorkloads: workloads.Items, Now: time.Now(), GroupLabel: s.GroupLabel})
	sections, err := s.render.render(page)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.page = page
	old := map[string]versioned{}
	for _, v := range s.sections {
		old[v.id] = v
	}
	next := make([]versioned, len(sections))
	layoutChanged := len(sections) != len(s.sections)
	changed := layoutChanged
	for i, sec := range sections {
		v, ok := old[sec.id]
		if !ok || !bytes.Equal(v.html, sec.html) {
			v = versioned{section: sec, version: s.version + 1}
			changed = true
		}
		next[i] = v
		layoutChanged = layoutChanged || s.sections[i].id != sec.id
	}
	if !changed && !layoutChanged {
		return nil
	}
	s.version++
	if layoutChanged {
		s.layout = s.version
	}
	s.sections = next
	close(s.waiters)
	s.waiters = make(chan struct{})
	return nil
}

// servesKueue: the API server serves Kueue (as the dashboard starts; a
// Kueue installed later shows after a restart).
func servesKueue(cfg *rest.Config) bool {
	d, err := discovery.NewDiscoveryClientForConfig(cfg)
	return err == nil && slicecheck.ServesKueue(d)
}

// versioned is a section with the version that last changed it.
type versioned struct {
	section
	version uint64
}

// current is the latest sections, the layout's version, and a channel
// closed when a newer version exists.
func (s *Server) current() ([]versioned, uint64, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sections, s.layout, s.waiters
}

func content(sections []versioned) []byte {
	plain := make([]section, len(sections))
	for i, v := range sections {
		plain[i] = v.section
	}
	return assemble(plain)
}

// Handler serves / (the page), /events (its updates as Server-Sent
// Events), /api/page (the page as JSON) and /healthz.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		sections, _, _ := s.current()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'unsafe-inline'; script-src 'unsafe-inline'")
		_ = tmpl.ExecuteTemplate(w, "page", template.HTML(content(sections)))
	})
	mux.HandleFunc("GET /events", s.events)
	mux.HandleFunc("GET /api/page", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		page := s.page
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(page)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	return mux
}

// events streams the page to one browser: all of it first and whenever
// the sections come and go (a JobSet created or deleted), else only the
// sections that changed since it last got them.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	var layout uint64
	sent := map[string]uint64{}
	fresh := true
	ping := time.NewTicker(15 * time.Second)
	defer ping.Stop()
	for {
		sections, current, newer := s.current()
		var b strings.Builder
		if fresh || current != layout {
			writeEvent(&b, "page", content(sections))
			fresh, layout = false, current
			clear(sent)
			for _, v := range sections {
				sent[v.id] = v.version
			}
		} else {
			for _, v := range sections {
				if v.version != sent[v.id] {
					writeEvent(&b, "section", append([]byte(v.id+"\n"), v.html...))
					sent[v.id] = v.version
				}
			}
		}
		if b.Len() > 0 {
			if _, err := io.WriteString(w, b.String()); err != nil || rc.Flush() != nil {
				return
			}
		}
		select {
		case <-r.Context().Done():
			return
		case <-newer:
		case <-ping.C:
			if _, err := io.WriteString(w, ": ping\n\n"); err != nil || rc.Flush() != nil {
				return
			}
		}
	}
}

// writeEvent writes one Server-Sent Event, a data line per line of data.
func writeEvent(b *strings.Builder, name string, data []byte) {
	b.WriteString("event: " + name + "\n")
	for _, line := range strings.Split(string(data), "\n") {
		b.WriteString("data: " + line + "\n")
	}
	b.WriteString("\n")
}

// Serve serves the dashboard on l until ctx ends.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	if err := srv.Serve(l); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// shown is what the page shows of a node, so that the heartbeats of 1,000
// nodes (a new lastHeartbeatTime, nothing else) do not re-render it; other
// objects count as changed on every update.
func shown(obj any) any {
	n := objcache.NodeOf(obj)
	if n == nil {
		return obj
	}
	taints := make([]string, 0, len(n.Spec.Taints))
	for _, t := range n.Spec.Taints {
		taints = append(taints, t.Key)
	}
	return fmt.Sprint(gke.NodeReady(n), n.Spec.Unschedulable, n.DeletionTimestamp != nil, n.Labels, taints)
}
