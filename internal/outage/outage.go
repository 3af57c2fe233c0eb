// Package outage makes API clients ride out an API-server outage instead of
// backing off from it.
package outage

import (
	"net/http"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
)

// RideOut makes cfg's requests wait for a refused API server to come back
// (polling every 250 ms, for up to 30 s: client-go's longest backoff).
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
		if err == nil || !utilnet.IsConnectionRefused(err) || time.Now().After(deadline) {
			return resp, err
		}
		if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
			return resp, err // the body cannot be read again
		}
		select {
		case <-req.Context().Done():
			return nil, err
		case <-time.After(t.poll):
		}
		if req.GetBody != nil {
			body, berr := req.GetBody()
			if berr != nil {
				return nil, err
			}
			req = req.Clone(req.Context())
			req.Body = body
		}
	}
}
