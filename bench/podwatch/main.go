// Command podwatch measures what receiving pod watch events costs the
// manager: the CPU its cache (objcache.Options) spends per pod status write
// it receives, for each way of receiving them, interleaved on one API
// server and etcd (envtest's, from bin/):
//
//   - bytes: the watch read and its frames counted, nothing decoded (the
//     floor: what the bytes alone cost);
//   - whole: pods decoded whole, as controller-runtime does by default
//     (the manager before objcache.SlimPodWatches);
//   - slim: objcache.HTTPClient, as the manager receives them;
//   - slim-http1: the same over HTTP/1.1 instead of HTTP/2;
//   - slim-gogc200, slim-gogc400: slim with the garbage collector run at
//     GOGC=200 or 400 instead of 100 (less CPU, a larger heap).
//
// Each receiver is a process of its own (this program, -receive), so its
// CPU is its own; the writes come from this one. The pods are TPU pods as
// the API server sends them to the manager (internal/objcache/testdata);
// each write is a kubelet-like status patch.
//
//	go run ./bench/podwatch -pods 1024 -writes 5 -rounds 5
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/multislice/multislice/internal/objcache"
	"github.com/multislice/multislice/internal/versions"
)

var ways = []string{"bytes", "whole", "slim", "slim-http1", "slim-gogc200", "slim-gogc400"}

// gogc is the GOGC a way's receiver runs with, if not the default.
var gogc = map[string]string{"slim-gogc200": "200", "slim-gogc400": "400"}

func main() {
	pods := flag.Int("pods", 1024, "pods (1..20000)")
	writes := flag.Int("writes", 5, "status writes per pod per round (1..20)")
	rounds := flag.Int("rounds", 5, "rounds of every way (1..20)")
	only := flag.String("ways", strings.Join(ways, ","), "the ways compared, in this order (whole is the baseline)")
	bin := flag.String("bin", "bin", "directory with the envtest binaries (make binaries)")
	receive := flag.String("receive", "", "run as a receiver of this way (used by the bench itself)")
	kubeconfig := flag.String("receiver-kubeconfig", "", "the receiver's kubeconfig (with -receive)")
	expect := flag.Int("expect", 0, "pod updates the receiver waits for (with -receive)")
	flag.Parse()
	var err error
	switch {
	case *receive != "":
		err = receiver(*receive, *kubeconfig, *expect)
	case *pods < 1 || *pods > 20000 || *writes < 1 || *writes > 20 || *rounds < 1 || *rounds > 20:
		fmt.Fprintln(os.Stderr, "-pods must be 1..20000, -writes 1..20 and -rounds 1..20")
		os.Exit(2)
	default:
		if ways, err = chosen(*only); err == nil {
			err = run(*bin, *pods, *writes, *rounds)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// chosen are the ways of -ways: known ones, whole among them.
func chosen(list string) ([]string, error) {
	var out []string
	hasWhole := false
	for _, w := range strings.Split(list, ",") {
		if !slices.Contains(ways, w) {
			return nil, fmt.Errorf("-ways: unknown way %q (want some of %s)", w, strings.Join(ways, ","))
		}
		hasWhole = hasWhole || w == "whole"
		out = append(out, w)
	}
	if !hasWhole {
		return nil, fmt.Errorf("-ways: name whole too: the others are compared with it")
	}
	return out, nil
}

const namespace = "podwatch"

func run(bin string, pods, writes, rounds int) error {
	te := &envtest.Environment{BinaryAssetsDirectory: filepath.Join(bin, "envtest-"+versions.Kubernetes+"-"+versions.Etcd)}
	cfg, err := te.Start()
	if err != nil {
		return fmt.Errorf("start the API server (make binaries builds it): %w", err)
	}
	defer func() { _ = te.Stop() }()
	user, err := te.AddUser(envtest.User{Name: "podwatch", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "podwatch-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx := context.Background()
	if err := createPods(ctx, cs, pods); err != nil {
		return err
	}
	fmt.Printf("%d TPU pods; per round %d status writes of each; load %s\n", pods, writes, load())
	perEvent := map[string][]float64{}
	rss := map[string][]int64{}
	write := 0
	for r := 1; r <= rounds; r++ {
		for _, way := range ways {
			cpu, maxRSS, err := round(ctx, cs, kubeconfig, way, pods, writes, &write)
			if err != nil {
				return fmt.Errorf("round %d %s: %w", r, way, err)
			}
			us := float64(cpu.Microseconds()) / float64(pods*writes)
			perEvent[way] = append(perEvent[way], us)
			rss[way] = append(rss[way], maxRSS)
			fmt.Printf("round %d %-10s %6.1f µs CPU per event (%.2f s for %d), peak RSS %d MiB\n", r, way, us, cpu.Seconds(), pods*writes, maxRSS>>10)
		}
	}
	fmt.Printf("median of %d rounds (min-max), load %s:\n", rounds, load())
	for _, way := range ways {
		fmt.Printf("  %-10s %6.1f µs per event (%.1f-%.1f), peak RSS %d MiB; per round vs whole %s\n", way,
			median(perEvent[way]), minOf(perEvent[way]), maxOf(perEvent[way]), medianInt(rss[way])>>10, ratios(perEvent[way], perEvent["whole"]))
	}
	return nil
}

// createPods creates n pods shaped as the manager's TPU pods, each on a
// node of its own (no scheduler runs).
func createPods(ctx context.Context, cs kubernetes.Interface, n int) error {
	raw, err := os.ReadFile("internal/objcache/testdata/tpu-pod.json")
	if err != nil {
		return fmt.Errorf("run from the repository's root: %w", err)
	}
	var template corev1.Pod
	if err := json.Unmarshal(raw, &template); err != nil {
		return err
	}
	template.ObjectMeta = metav1.ObjectMeta{Labels: template.Labels, Annotations: template.Annotations}
	template.Status = corev1.PodStatus{}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	return parallel(n, func(i int) error {
		p := template.DeepCopy()
		p.Name, p.Spec.NodeName = fmt.Sprintf("worker-%d", i), fmt.Sprintf("node-%d", i)
		_, err := cs.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{FieldManager: "kube-controller-manager"})
		return err
	})
}

// round starts a receiver of way, makes writes status writes of every pod
// once it has synced, and returns the receiver's CPU from then until it
// has received them all, and its peak RSS in KiB.
func round(ctx context.Context, cs kubernetes.Interface, kubeconfig, way string, pods, writes int, write *int) (time.Duration, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-receive", way, "-receiver-kubeconfig", kubeconfig, "-expect", fmt.Sprint(pods*writes))
	cmd.Stderr = os.Stderr
	if g, ok := gogc[way]; ok {
		cmd.Env = append(os.Environ(), "GOGC="+g)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	defer func() { _ = cmd.Wait() }()
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "ready" {
		return 0, 0, fmt.Errorf("receiver did not start: %q %v", lines.Text(), lines.Err())
	}
	for w := 0; w < writes; w++ {
		*write++
		n := *write
		err := parallel(pods, func(i int) error {
			patch := fmt.Sprintf(`{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-12-05T00:00:00Z"}],`+
				`"containerStatuses":[{"name":"main","image":"trainer","imageID":"","ready":true,"restartCount":%d,"started":true,"state":{"running":{"startedAt":"2026-12-05T00:00:%02dZ"}}}]}}`, n, n%60)
			_, err := cs.CoreV1().Pods(namespace).Patch(ctx, fmt.Sprintf("worker-%d", i), types.StrategicMergePatchType, []byte(patch),
				metav1.PatchOptions{FieldManager: "kubelet"}, "status")
			return err
		})
		if err != nil {
			return 0, 0, err
		}
	}
	if !lines.Scan() {
		return 0, 0, fmt.Errorf("receiver ended without its figures: %v", lines.Err())
	}
	var cpu time.Duration
	var maxRSS int64
	if _, err := fmt.Sscanf(lines.Text(), "%d %d", &cpu, &maxRSS); err != nil {
		return 0, 0, fmt.Errorf("receiver said %q: %w", lines.Text(), err)
	}
	return cpu, maxRSS, nil
}

// receiver receives the pods' watch events the way named, says "ready"
// once it has the pods, and, once it has received expect updates, its CPU
// since then (ns) and its peak RSS (KiB).
func receiver(way, kubeconfig string, expect int) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var start time.Duration
	ready := func() {
		start = cpuTime()
		fmt.Println("ready")
	}
	if way == "bytes" {
		err = countFrames(ctx, cfg, expect, ready)
	} else {
		err = informer(ctx, cfg, way, expect, ready)
	}
	if err != nil {
		return err
	}
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	fmt.Println(int64(cpuTime()-start), ru.Maxrss)
	return nil
}

// informer runs a cache of objcache.Options over the way's HTTP client and
// counts its pod updates.
func informer(ctx context.Context, cfg *rest.Config, way string, expect int, ready func()) error {
	o := objcache.Options()
	var err error
	switch way {
	case "whole":
		o.HTTPClient, err = rest.HTTPClientFor(cfg)
	case "slim", "slim-gogc200", "slim-gogc400":
		o.HTTPClient, err = objcache.HTTPClient(cfg)
	case "slim-http1":
		cfg = rest.CopyConfig(cfg)
		cfg.NextProtos = []string{"http/1.1"}
		o.HTTPClient, err = objcache.HTTPClient(cfg)
	default:
		return fmt.Errorf("unknown way %q (want one of %s)", way, strings.Join(ways, ", "))
	}
	if err != nil {
		return err
	}
	c, err := cache.New(cfg, o)
	if err != nil {
		return err
	}
	inf, err := c.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return err
	}
	var updates atomic.Int64
	done := make(chan struct{})
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(_, _ any) {
		if updates.Add(1) == int64(expect) {
			close(done)
		}
	}}); err != nil {
		return err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return fmt.Errorf("cache not synced")
	}
	ready()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("received %d of %d updates", updates.Load(), expect)
	}
}

// countFrames lists the pods, then watches them from there in protobuf
// and counts the frames, reading of each only its resourceVersion: a
// watch the API server closes (it closes those of consumers it finds
// slow) goes on from there.
func countFrames(ctx context.Context, cfg *rest.Config, expect int, ready func()) error {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	list, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	rv, n := list.ResourceVersion, 0
	for first := true; n < expect; first = false {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+
			"/api/v1/pods?watch=true&allowWatchBookmarks=false&resourceVersion="+rv, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Accept", "application/vnd.kubernetes.protobuf;stream=watch")
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		if first {
			ready()
		}
		body := bufio.NewReader(resp.Body)
		var size [4]byte
		var frame []byte
		for ; n < expect; n++ {
			if _, err := io.ReadFull(body, size[:]); err != nil {
				break
			}
			if l := int(binary.BigEndian.Uint32(size[:])); cap(frame) < l {
				frame = make([]byte, l)
			} else {
				frame = frame[:l]
			}
			if _, err := io.ReadFull(body, frame); err != nil {
				break
			}
			if v := resourceVersion(frame); v != "" {
				rv = v
			}
		}
		resp.Body.Close()
	}
	return nil
}

// resourceVersion is a pod watch event's (WatchEvent.object 2, its raw 1
// past "k8s\x00", Unknown.raw 2, Pod.metadata 1, ObjectMeta.resourceVersion 6).
func resourceVersion(event []byte) string {
	b := field(field(event, 2), 1)
	if len(b) < 4 {
		return ""
	}
	return string(field(field(field(b[4:], 2), 1), 6))
}

// field is msg's last length-delimited field num, nil if none.
func field(msg []byte, num protowire.Number) []byte {
	var v []byte
	for len(msg) > 0 {
		got, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return nil
		}
		m := protowire.ConsumeFieldValue(got, typ, msg[n:])
		if m < 0 {
			return nil
		}
		if got == num && typ == protowire.BytesType {
			v, _ = protowire.ConsumeBytes(msg[n:])
		}
		msg = msg[n+m:]
	}
	return v
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// parallel runs f for 0..n-1, 32 at once, as the kubelets' writes come.
func parallel(n int, f func(i int) error) error {
	var g errgroup.Group
	g.SetLimit(32)
	for i := 0; i < n; i++ {
		g.Go(func() error { return f(i) })
	}
	return g.Wait()
}

func load() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func median(v []float64) float64 {
	s := append([]float64{}, v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func medianInt(v []int64) int64 {
	s := append([]int64{}, v...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func minOf(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = min(m, x)
	}
	return m
}

func maxOf(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// ratios are a/b per round, and their median.
func ratios(a, b []float64) string {
	var r []float64
	var s []string
	for i := range a {
		r = append(r, a[i]/b[i])
		s = append(s, fmt.Sprintf("%.2f", a[i]/b[i]))
	}
	return fmt.Sprintf("%.2fx (%s)", median(r), strings.Join(s, " "))
}
