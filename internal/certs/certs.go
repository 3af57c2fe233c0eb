// Package certs keeps the webhook server's TLS certificate: a private CA and
// a serving certificate, stored in a Secret so every replica and restart
// shares them, written to the server's certificate directory, and renewed
// well before they expire. No cert-manager needed.
package certs

import (
	"bytes"
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/multislice/multislice/internal/pki"
)

const (
	validity = 365 * 24 * time.Hour
	// RenewBefore: a certificate this close to expiry is replaced.
	RenewBefore = 90 * 24 * time.Hour
)

// Options say where the certificate lives and whom it serves.
type Options struct {
	Namespace, SecretName string
	// DNSNames and IPs the serving certificate covers (service names, 127.0.0.1).
	DNSNames []string
	IPs      []net.IP
	// Dir receives tls.crt, tls.key and ca.crt for the webhook server.
	Dir string
}

// Ensure makes sure a valid certificate exists in the Secret (creating or
// renewing it) and in Dir, and returns the CA bundle for webhook configurations.
func Ensure(ctx context.Context, client kubernetes.Interface, o Options, now time.Time) ([]byte, error) {
	secrets := client.CoreV1().Secrets(o.Namespace)
	s, err := secrets.Get(ctx, o.SecretName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: o.SecretName, Namespace: o.Namespace}, Type: corev1.SecretTypeTLS}
		if s.Data, err = generate(o, now); err != nil {
			return nil, err
		}
		if s, err = secrets.Create(ctx, s, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
			return Ensure(ctx, client, o, now) // another replica won the race: use its certificate
		}
	case err == nil && NeedsRenewal(s.Data, o, now):
		if s.Data, err = renewed(s.Data, o, now); err != nil {
			return nil, err
		}
		s, err = secrets.Update(ctx, s, metav1.UpdateOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("webhook certificate secret %s/%s: %w", o.Namespace, o.SecretName, err)
	}
	if err := writeFiles(o.Dir, s.Data); err != nil {
		return nil, err
	}
	return Bundle(s.Data, now), nil
}

// previousCA keeps the CA a renewal replaced, while it is valid.
const previousCA = "ca-previous.crt"

// renewed is a new CA and serving certificate that remembers the old CA:
// another replica serves the old certificate until it next reads the
// Secret, and the webhook configurations must trust both meanwhile.
func renewed(old map[string][]byte, o Options, now time.Time) (map[string][]byte, error) {
	data, err := generate(o, now)
	if err != nil {
		return nil, err
	}
	if valid(old["ca.crt"], now) {
		data[previousCA] = old["ca.crt"]
	}
	return data, nil
}

// Bundle is the CA bundle to inject: the current CA, and the previous one
// while it is valid.
func Bundle(data map[string][]byte, now time.Time) []byte {
	bundle := append([]byte(nil), data["ca.crt"]...)
	if prev := data[previousCA]; valid(prev, now) && !bytes.Equal(prev, data["ca.crt"]) {
		bundle = append(bundle, prev...)
	}
	return bundle
}

// valid: a PEM certificate that has not expired.
func valid(certPEM []byte, now time.Time) bool {
	cert := parseCert(certPEM)
	return cert != nil && now.Before(cert.NotAfter)
}

// parseCert reads a PEM certificate; nil when there is none.
func parseCert(certPEM []byte) *x509.Certificate {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return nil
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil
	}
	return cert
}

// NeedsRenewal: missing, unparsable, expiring within RenewBefore, or not
// covering the names the server is reached by.
func NeedsRenewal(data map[string][]byte, o Options, now time.Time) bool {
	cert := parseCert(data[corev1.TLSCertKey])
	if cert == nil || len(data[corev1.TLSPrivateKeyKey]) == 0 || len(data["ca.crt"]) == 0 || now.Add(RenewBefore).After(cert.NotAfter) {
		return true
	}
	for _, n := range o.DNSNames {
		if cert.VerifyHostname(n) != nil {
			return true
		}
	}
	for _, ip := range o.IPs {
		if cert.VerifyHostname(ip.String()) != nil {
			return true
		}
	}
	return false
}

func generate(o Options, now time.Time) (map[string][]byte, error) {
	ca, err := pki.NewCA("multislice-webhook-ca", now, validity)
	if err != nil {
		return nil, err
	}
	cert, key, err := ca.Issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "multislice-webhook"},
		DNSNames:    o.DNSNames,
		IPAddresses: o.IPs,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, now, validity)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{"ca.crt": ca.CertPEM, corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key}, nil
}

// writeFiles writes only what changed, so the server's file watcher
// reloads exactly when the certificate is renewed.
func writeFiles(dir string, data map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, name := range []string{"ca.crt", corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
		path := filepath.Join(dir, name)
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data[name]) {
			continue
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, data[name], 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
	}
	return nil
}
