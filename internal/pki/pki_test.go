package pki

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"testing"
	"time"
)

func TestIssuedCertificateVerifiesAgainstItsCA(t *testing.T) {
	now := time.Now()
	ca, err := NewCA("test-ca", now, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "server"},
		DNSNames:    []string{"svc.ns.svc"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatalf("certificate and key do not match: %v", err)
	}
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	for _, name := range []string{"svc.ns.svc", "127.0.0.1"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name}); err != nil {
			t.Errorf("verify for %s: %v", name, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "other.example"}); err == nil {
		t.Error("certificate verified for a name it does not carry")
	}
	if leaf.NotAfter.After(now.Add(time.Hour + time.Minute)) {
		t.Errorf("validity %s, want one hour", leaf.NotAfter.Sub(now))
	}
}
