package realhost

import (
	"context"
	"io"
	"net"
	"sync"
)

// Relay passes every TCP connection accepted on l to target, until ctx
// ends. The local cluster's API server listens on loopback only; a relay
// on the pod network's gateway is how pods on real hosts reach it (the
// kubernetes Service's endpoint), as a node reaches a GKE control plane.
// The API server's TLS goes through untouched.
func Relay(ctx context.Context, l net.Listener, target string) error {
	go func() {
		<-ctx.Done()
		_ = l.Close()
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			var d net.Dialer
			upstream, err := d.DialContext(ctx, "tcp", target)
			if err != nil {
				return
			}
			defer upstream.Close()
			done := make(chan struct{})
			go func() {
				_, _ = io.Copy(upstream, conn)
				if tc, ok := upstream.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
				}
				close(done)
			}()
			_, _ = io.Copy(conn, upstream)
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			<-done
		}()
	}
}
