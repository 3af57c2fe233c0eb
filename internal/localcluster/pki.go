package localcluster

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/multislice/multislice/internal/pki"
)

// certValidity is long enough for any local cluster; `up` makes new ones.
const certValidity = 365 * 24 * time.Hour

// identity is a client certificate the cluster's components present.
type identity struct {
	name         string // file stem and kubeconfig user
	commonName   string
	organization []string
}

// ManagerUser is the user the local manager authenticates as; `up` grants
// it the manager's shipped permissions (config/rbac), nothing more.
const ManagerUser = "multislice-manager"

// kwokUser is kwok's user, granted sim.KwokRBAC.
const kwokUser = "multislice-kwok"

// identities: the scheduler and controller-manager get their RBAC-bootstrapped
// users, kwok and the manager their own least-privilege roles; only the
// admin (the person at the keyboard, and the simulated cloud, which plays
// GKE's control plane) is a cluster admin.
var identities = []identity{
	{name: "admin", commonName: "multislice-admin", organization: []string{"system:masters"}},
	{name: "kube-scheduler", commonName: "system:kube-scheduler"},
	{name: "kube-controller-manager", commonName: "system:kube-controller-manager"},
	{name: "kwok", commonName: kwokUser},
	{name: "manager", commonName: ManagerUser},
	{name: "coredns", commonName: coreDNSUser},
	{name: "kube-proxy", commonName: "system:kube-proxy"}, // bound to system:node-proxier by RBAC's bootstrap
	{name: "kueue", commonName: KueueUser},
}

// writePKI creates a fresh CA, the apiserver serving certificate, one client
// certificate per identity, one node identity per real host (node-<name>,
// user system:node:<name> in system:nodes, which the Node authorizer
// confines to its own node and pods) and the service-account signing key
// under dir.
func writePKI(dir string, realHosts []string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	now := time.Now()
	ca, err := pki.NewCA("multislice-local-ca", now, certValidity)
	if err != nil {
		return err
	}
	caKey, err := pki.KeyPEM(ca.Key)
	if err != nil {
		return err
	}
	if err := writePair(dir, "ca", ca.CertPEM, caKey); err != nil {
		return err
	}
	leaves := map[string]*x509.Certificate{"apiserver": {
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(serviceIP)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}}
	// etcd serves (and talks to its peer port) only over TLS with client
	// certificates from this CA: nobody else on the machine reads its data.
	leaves["etcd"] = &x509.Certificate{
		Subject:     pkix.Name{CommonName: "etcd"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	leaves["apiserver-etcd-client"] = &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver-etcd-client"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	// The simulated kubelets' endpoint (and the API server's egress proxy
	// in front of it), and the API server's client identity towards them.
	leaves["kubelet"] = &x509.Certificate{
		Subject:     pkix.Name{CommonName: "multislice-simulated-kubelet"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	// Kueue's webhooks and metrics (up --kueue), on the loopback.
	leaves["kueue-serving"] = &x509.Certificate{
		Subject:     pkix.Name{CommonName: "multislice-kueue"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leaves["apiserver-kubelet-client"] = &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver-kubelet-client"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	ids := slices.Clone(identities)
	for _, node := range realHosts {
		ids = append(ids, identity{name: "node-" + node, commonName: "system:node:" + node, organization: []string{"system:nodes"}})
	}
	for _, id := range ids {
		leaves[id.name] = &x509.Certificate{
			Subject:     pkix.Name{CommonName: id.commonName, Organization: id.organization},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
	}
	for name, tmpl := range leaves {
		cert, key, err := ca.Issue(tmpl, now, certValidity)
		if err != nil {
			return fmt.Errorf("issue %s certificate: %w", name, err)
		}
		if err := writePair(dir, name, cert, key); err != nil {
			return err
		}
	}
	// Service-account tokens are signed with RSA, which every client verifies.
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	saPEM, err := pki.KeyPEM(saKey)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "sa.key"), saPEM, 0o600)
}

func writePair(dir, name string, cert, key []byte) error {
	if err := os.WriteFile(filepath.Join(dir, name+".crt"), cert, 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name+".key"), key, 0o600)
}

// etcdClientTLS is how `up` checks etcd's health: with the apiserver's
// etcd client certificate, as etcd accepts no one else.
func (h Home) etcdClientTLS() (*tls.Config, error) {
	ca, err := os.ReadFile(h.pki("ca.crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	pair, err := tls.LoadX509KeyPair(h.pki("apiserver-etcd-client.crt"), h.pki("apiserver-etcd-client.key"))
	if err != nil {
		return nil, err
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}
