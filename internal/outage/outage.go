// Package outage makes API clients ride out an API-server outage instead of
// backing off from it.
package outage

import (
	"io"
	"net/http"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
)

// RideOut makes cfg's requests wait for a refused API server to come back,
// and for a restarted one to authorize again (polling every 250 ms, for up
// to 30 s: client-go's longest backoff).
func RideOut(cfg *rest.Config) {
	cfg.Wrap(Transport(250*time.Millisecond, 30*time.Second))
}

// Transport makes a request whose connection the API server refused
// wait for it to come back (polling every poll, at most limit) instead of
// failing. client-go's informers back off exponentially after failures, up
// to 30 s: after an 8 s outage the manager's caches caught up 10-15 s
// after the API server had returned, and every status write in between
// conflicted. A refused connection carried no byte of the request, so
// sending it again is safe.
func Transport(poll, limit time.Duration) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		return outageTransport{next: next, poll: poll, limit: limit}
	}
}

type outageTransport struct {
	next        http.RoundTripper
	poll, limit time.Duration
}

func (t outageTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	deadline := time.Now().Add(t.limit)
	for {
		resp, err := t.next.RoundTrip(req)
		refused := err != nil && utilnet.IsConnectionRefused(err)
		starting := err == nil && resp.StatusCode == http.StatusForbidden && t.startingUp(req, deadline)
		if !(refused || starting) || time.Now().After(deadline) {
			return resp, err
		}
		if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
			return resp, err // the body cannot be read again
		}
		if starting {
			resp.Body.Close()
		}
		select {
		case <-req.Context().Done():
			return nil, req.Context().Err()
		case <-time.After(t.poll):
		}
		if req.GetBody != nil {
			body, berr := req.GetBody()
			if berr != nil {
				return nil, berr
			}
			req = req.Clone(req.Context())
			req.Body = body
		}
	}
}

// startingUp tells a refusal by an API server that has just started from a
// real one. A restarted API server accepts requests before its authorizer
// has read the RBAC objects and refuses them all ("forbidden") until then,
// while its /readyz fails. Every such refusal used to double the backoff of
// the manager's informers (0.8 s doubling to 30 s, reset only after 2 min
// without failure): after a few outages in a row the manager saw its Jobs
// again only 30-60 s after the API server had returned, and a restart's
// pods waited that long (TestControlPlaneOutage, 6 of 8 pods for 90 s).
// It waits, up to deadline, for /readyz to pass: true if it was failing
// (the request is worth sending again), false if the server was ready
// (a real refusal) or never became so.
func (t outageTransport) startingUp(req *http.Request, deadline time.Time) bool {
	failed := false
	for {
		ready, err := t.ready(req)
		if err == nil && ready {
			return failed
		}
		failed = true
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-req.Context().Done():
			return false
		case <-time.After(t.poll):
		}
	}
}

// ready asks the API server of req for /readyz, as the same client.
func (t outageTransport) ready(req *http.Request) (bool, error) {
	u := *req.URL
	u.Path, u.RawQuery = "/readyz", ""
	probe, err := http.NewRequestWithContext(req.Context(), http.MethodGet, u.String(), nil)
	if err != nil {
		return false, err
	}
	if auth := req.Header.Get("Authorization"); auth != "" {
		probe.Header.Set("Authorization", auth)
	}
	resp, err := t.next.RoundTrip(probe)
	if err != nil {
		return false, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK, nil
}
