package outage

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestTransport: a request sent while nothing listens is answered as
// soon as the server starts, body and all; without a server it fails after
// the limit; a cancelled request stops waiting at once.
func TestTransport(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // the outage
	client := &http.Client{Transport: Transport(20*time.Millisecond, 5*time.Second)(http.DefaultTransport)}

	go func() {
		time.Sleep(300 * time.Millisecond)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Error(err)
			return
		}
		_ = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			_, _ = w.Write(b)
		}))
	}()
	began := time.Now()
	resp, err := client.Post("http://"+addr, "text/plain", strings.NewReader("status"))
	if err != nil {
		t.Fatalf("request during the outage: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "status" || time.Since(began) < 250*time.Millisecond {
		t.Errorf("answer %q after %s, want the body echoed once the server is back", b, time.Since(began))
	}

	l2, _ := net.Listen("tcp", "127.0.0.1:0")
	gone := l2.Addr().String()
	l2.Close()
	short := &http.Client{Transport: Transport(20*time.Millisecond, 200*time.Millisecond)(http.DefaultTransport)}
	began = time.Now()
	if _, err := short.Get("http://" + gone); err == nil || time.Since(began) > 2*time.Second {
		t.Errorf("no server: err %v after %s, want a refusal after the limit", err, time.Since(began))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+gone, nil)
	began = time.Now()
	if _, err := client.Do(req); err == nil || time.Since(began) > time.Second {
		t.Errorf("cancelled: err %v after %s", err, time.Since(began))
	}
}

// TestTransportWaitsForAuthorization: an API server that has just started
// refuses requests ("forbidden") while its /readyz fails; the request is
// answered once it is ready. A refusal by a ready server is returned at once.
func TestTransportWaitsForAuthorization(t *testing.T) {
	var startedAt = time.Now()
	starting := func() bool { return time.Since(startedAt) < 300*time.Millisecond }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/readyz" && starting():
			w.WriteHeader(http.StatusInternalServerError)
		case r.URL.Path == "/readyz":
			_, _ = w.Write([]byte("ok"))
		case r.URL.Path == "/forbidden" || starting():
			w.WriteHeader(http.StatusForbidden)
		default:
			b, _ := io.ReadAll(r.Body)
			_, _ = w.Write(b)
		}
	}))
	defer srv.Close()
	client := &http.Client{Transport: Transport(20*time.Millisecond, 5*time.Second)(http.DefaultTransport)}

	resp, err := client.Post(srv.URL+"/api", "text/plain", strings.NewReader("status"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(b) != "status" || time.Since(startedAt) < 250*time.Millisecond {
		t.Errorf("during start-up: %s %q after %s, want the body echoed once ready", resp.Status, b, time.Since(startedAt))
	}

	began := time.Now()
	resp, err = client.Get(srv.URL + "/forbidden")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || time.Since(began) > time.Second {
		t.Errorf("a ready server's refusal: %s after %s, want 403 at once", resp.Status, time.Since(began))
	}
}
