package sim

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// KubeletPort is the kubelet port every simulated node declares
// (status.daemonEndpoints), as a real kubelet's 10250.
const KubeletPort = 10250

// Kubelet serves the part of the kubelet API that reads pods' logs, for
// every simulated node. The API server reaches nodes through its "cluster"
// egress, an HTTP CONNECT proxy (as konnectivity in GKE): Serve is that
// proxy. A tunnel to any node's kubelet port ends here; a tunnel anywhere
// else is passed through as a plain TCP connection.
type Kubelet struct {
	// Pods is the process's cache (NewCache), started by the caller: a
	// followed log costs no API call.
	Pods cache.Cache
	// TLS serves both the proxy and the kubelet endpoint; its ClientCAs
	// must be the cluster's CA (only the API server may connect).
	TLS *tls.Config
	// Poll is how often a followed container is looked at (default 250 ms).
	Poll time.Duration
}

// Serve accepts proxy connections on l until ctx ends.
func (k *Kubelet) Serve(ctx context.Context, l net.Listener) error {
	if k.Poll == 0 {
		k.Poll = 250 * time.Millisecond
	}
	if _, err := k.Pods.GetInformer(ctx, &corev1.Pod{}); err != nil {
		return err
	}
	if !k.Pods.WaitForCacheSync(ctx) {
		return ctx.Err()
	}
	tunnels := newConnListener(l.Addr())
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", k.containerLogs)
	kubelet := &http.Server{Handler: mux, BaseContext: func(net.Listener) context.Context { return ctx }, ReadHeaderTimeout: 10 * time.Second}
	proxy := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k.connect(ctx, w, r, tunnels)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = proxy.Close()
		_ = kubelet.Close()
	}()
	go func() { _ = kubelet.Serve(tls.NewListener(tunnels, k.TLS)) }()
	err := proxy.Serve(tls.NewListener(l, k.TLS))
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// connect handles one CONNECT request of the API server.
func (k *Kubelet) connect(ctx context.Context, w http.ResponseWriter, r *http.Request, tunnels *connListener) {
	if r.Method != http.MethodConnect {
		http.Error(w, "only CONNECT is served here", http.StatusMethodNotAllowed)
		return
	}
	_, port, err := net.SplitHostPort(r.Host)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var upstream net.Conn
	if port != fmt.Sprint(KubeletPort) {
		var d net.Dialer
		if upstream, err = d.DialContext(ctx, "tcp", r.Host); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
	}
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		if upstream != nil {
			upstream.Close()
		}
		return
	}
	if _, err := conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		conn.Close()
		return
	}
	tunnel := &bufferedConn{Conn: conn, r: buf.Reader}
	if upstream == nil {
		tunnels.push(tunnel)
		return
	}
	go func() {
		defer conn.Close()
		defer upstream.Close()
		go func() { _, _ = io.Copy(upstream, tunnel) }()
		_, _ = io.Copy(conn, upstream)
	}()
}

// containerLogs is the kubelet's GET /containerLogs/{ns}/{pod}/{container}
// with follow, previous, timestamps and tailLines.
func (k *Kubelet) containerLogs(w http.ResponseWriter, r *http.Request) {
	key := types.NamespacedName{Namespace: r.PathValue("namespace"), Name: r.PathValue("pod")}
	container := r.PathValue("container")
	q := r.URL.Query()
	follow, previous, stamps := q.Get("follow") == "true", q.Get("previous") == "true", q.Get("timestamps") == "true"
	pod, lines, ended, code, err := k.read(r.Context(), key, container, previous)
	if err != nil {
		http.Error(w, err.Error(), code)
		return
	}
	if tail, err := strconv.Atoi(q.Get("tailLines")); err == nil && tail >= 0 && tail < len(lines) {
		lines = lines[len(lines)-tail:]
	}
	w.Header().Set("Content-Type", "text/plain")
	out := bufio.NewWriter(w)
	write := func(lines []LogLine) {
		for _, l := range lines {
			if stamps {
				fmt.Fprintf(out, "%s ", l.Time.UTC().Format(time.RFC3339Nano))
			}
			fmt.Fprintln(out, l.Text)
		}
		_ = out.Flush()
		_ = http.NewResponseController(w).Flush()
	}
	write(lines)
	if !follow || ended || previous {
		return
	}
	// Follow this instance until it ends: it exits, restarts in place (its
	// restart count moves on) or its pod goes.
	incarnation := findStatus(&pod, container).RestartCount
	tick := time.NewTicker(k.Poll)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
		var now corev1.Pod
		if err := k.Pods.Get(r.Context(), key, &now); err != nil || now.UID != pod.UID || now.DeletionTimestamp != nil {
			write([]LogLine{{Time: time.Now(), Text: "stopped: the pod was deleted"}})
			return
		}
		st := findStatus(&now, container)
		if st == nil {
			return
		}
		var t *corev1.ContainerStateTerminated
		switch {
		case st.RestartCount != incarnation:
			t = st.LastTerminationState.Terminated
		case st.State.Terminated != nil:
			t = st.State.Terminated
		}
		if t != nil {
			write([]LogLine{exitLine(t)})
		}
		if t != nil || st.RestartCount != incarnation {
			return
		}
	}
}

// catchUp bounds how long a log request waits for the cache to show a
// pod or container the API server already shows.
const catchUp = 5 * time.Second

// read is the container's log as the cache knows it. A real kubelet writes
// the status a client read before asking, so it never answers "not found"
// or "waiting to start" for a container the client saw running; a cache
// can lag the API server, so those answers are given only once it has had
// catchUp to show the pod started.
func (k *Kubelet) read(ctx context.Context, key types.NamespacedName, container string, previous bool) (pod corev1.Pod, lines []LogLine, ended bool, code int, err error) {
	deadline := time.Now().Add(catchUp)
	for {
		pod = corev1.Pod{}
		if err = k.Pods.Get(ctx, key, &pod); err != nil {
			code = http.StatusInternalServerError
			if apierrors.IsNotFound(err) {
				code = http.StatusNotFound
			}
		} else if lines, ended, err = ContainerLog(&pod, container, previous); err != nil {
			code = http.StatusBadRequest
		}
		if err == nil || ended || code == http.StatusInternalServerError || time.Now().After(deadline) {
			return pod, lines, ended, code, err
		}
		select {
		case <-ctx.Done():
			return pod, lines, ended, code, err
		case <-time.After(k.Poll):
		}
	}
}

// connListener is a net.Listener of connections handed over by the proxy.
type connListener struct {
	addr  net.Addr
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
}

func newConnListener(addr net.Addr) *connListener {
	return &connListener{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *connListener) push(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		c.Close()
	}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *connListener) Addr() net.Addr { return l.addr }

// bufferedConn reads first what the proxy's reader had already buffered.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
