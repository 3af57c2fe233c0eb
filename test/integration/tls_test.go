package integration

import (
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/multislice/multislice/internal/manager"
	"github.com/multislice/multislice/test/framework"
)

// handshake dials addr over TLS with the client's limits and reports the error.
func handshake(addr string, minVersion, maxVersion uint16, suites ...uint16) error {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{
		InsecureSkipVerify: true, // only the handshake's terms are under test
		MinVersion:         minVersion, MaxVersion: maxVersion, CipherSuites: suites,
	})
	if err == nil {
		conn.Close()
	}
	return err
}

// waitListening waits up to 10 s for addr to accept connections, so that a
// refused handshake below means refused terms, not a server not yet started.
func waitListening(t *testing.T, addr string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not accept connections: %v", addr, err)
		}
	}
}

// TestTLSOptions: the webhook server refuses TLS 1.1 and weak suites by
// default; raised to TLS 1.3 (upstream's TLSOptions), the webhook and the
// secure metrics servers refuse TLS 1.2.
func TestTLSOptions(t *testing.T) {
	env := sharedEnv(t)
	waitListening(t, env.WebhookAddr)
	if err := handshake(env.WebhookAddr, tls.VersionTLS10, tls.VersionTLS11); err == nil {
		t.Error("webhooks: a TLS 1.1 handshake succeeded")
	}
	if err := handshake(env.WebhookAddr, tls.VersionTLS12, tls.VersionTLS12, tls.TLS_RSA_WITH_AES_128_CBC_SHA256, tls.TLS_RSA_WITH_RC4_128_SHA); err == nil {
		t.Error("webhooks: a handshake offering only weak suites succeeded")
	}
	if err := handshake(env.WebhookAddr, tls.VersionTLS12, tls.VersionTLS12); err != nil {
		t.Errorf("webhooks: TLS 1.2 with Go's secure suites: %v", err)
	}

	strict, err := manager.ParseTLSOptions("VersionTLS13", nil)
	if err != nil {
		t.Fatal(err)
	}
	env13 := framework.StartEnvWith(t, func(o *manager.Options) { o.TLS, o.MetricsSecure = strict, true })
	for what, addr := range map[string]string{"webhooks": env13.WebhookAddr, "metrics": env13.MetricsAddr} {
		waitListening(t, addr) // the metrics server starts after the manager is ready
		if err := handshake(addr, tls.VersionTLS12, tls.VersionTLS12); err == nil {
			t.Errorf("%s: a TLS 1.2 handshake succeeded with VersionTLS13 the minimum", what)
		}
		if err := handshake(addr, tls.VersionTLS13, tls.VersionTLS13); err != nil {
			t.Errorf("%s: TLS 1.3: %v", what, err)
		}
	}
}
