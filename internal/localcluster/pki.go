package localcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certValidity is long enough for any local cluster; `up` makes new ones.
const certValidity = 365 * 24 * time.Hour

// identity is a client certificate the cluster's components present.
type identity struct {
	name         string // file stem and kubeconfig user
	commonName   string
	organization []string
}

// identities: the scheduler and controller-manager get their RBAC-bootstrapped
// users; kwok and the admin (the user, the manager) are cluster admins.
var identities = []identity{
	{name: "admin", commonName: "multislice-admin", organization: []string{"system:masters"}},
	{name: "kube-scheduler", commonName: "system:kube-scheduler"},
	{name: "kube-controller-manager", commonName: "system:kube-controller-manager"},
	{name: "kwok", commonName: "multislice-kwok", organization: []string{"system:masters"}},
	{name: "manager", commonName: "multislice-manager", organization: []string{"system:masters"}},
}

// writePKI creates a fresh CA, the apiserver serving certificate, one client
// certificate per identity and the service-account signing key under dir.
func writePKI(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "multislice-local-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	caCert, _ := x509.ParseCertificate(caDER)
	if err := writeCertAndKey(dir, "ca", caDER, caKey); err != nil {
		return err
	}
	serving := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(serviceIP)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if err := issue(dir, "apiserver", serving, caCert, caKey); err != nil {
		return err
	}
	for _, id := range identities {
		client := &x509.Certificate{
			Subject:     pkix.Name{CommonName: id.commonName, Organization: id.organization},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		if err := issue(dir, id.name, client, caCert, caKey); err != nil {
			return err
		}
	}
	// Service-account tokens are signed with RSA, which every client verifies.
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	return writeKey(filepath.Join(dir, "sa.key"), saKey)
}

func issue(dir, name string, tmpl, ca *x509.Certificate, caKey *ecdsa.PrivateKey) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl.SerialNumber = serial()
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(certValidity)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("issue %s certificate: %w", name, err)
	}
	return writeCertAndKey(dir, name, der, key)
}

func writeCertAndKey(dir, name string, der []byte, key any) error {
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(filepath.Join(dir, name+".crt"), cert, 0o600); err != nil {
		return err
	}
	return writeKey(filepath.Join(dir, name+".key"), key)
}

func writeKey(path string, key any) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}
