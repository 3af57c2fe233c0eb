package manager

import (
	"crypto/tls"
	"fmt"
	"slices"
	"strings"
)

// TLSOptions are the TLS settings of every server the manager runs over
// TLS (webhooks, metrics), as upstream's TLSOptions: a minimum version,
// TLS 1.2 unless raised, and the TLS 1.2 cipher suites (Go's secure
// default list when empty; TLS 1.3 suites are not configurable).
type TLSOptions struct {
	MinVersion   uint16
	CipherSuites []uint16
}

// tlsVersions are the versions a server may require; older ones are refused.
var tlsVersions = map[string]uint16{"VersionTLS12": tls.VersionTLS12, "VersionTLS13": tls.VersionTLS13}

// ParseTLSOptions reads the version name (VersionTLS12 or VersionTLS13, as
// upstream and Kubernetes spell them) and cipher suite names (IANA, as Go
// names them), refusing unknown names and weak suites by name.
func ParseTLSOptions(minVersion string, suites []string) (TLSOptions, error) {
	var o TLSOptions
	v, ok := tlsVersions[minVersion]
	if !ok {
		return o, fmt.Errorf("TLS minimum version %q: want VersionTLS12 or VersionTLS13 (older versions are refused)", minVersion)
	}
	o.MinVersion = v
	secure := map[string]uint16{}
	for _, s := range tls.CipherSuites() {
		secure[s.Name] = s.ID
	}
	var weak []string
	for _, s := range tls.InsecureCipherSuites() {
		weak = append(weak, s.Name)
	}
	for _, name := range suites {
		name = strings.TrimSpace(name)
		if slices.Contains(weak, name) {
			return o, fmt.Errorf("TLS cipher suite %s is weak and refused: choose among %s", name, strings.Join(secureNames(), ", "))
		}
		id, ok := secure[name]
		if !ok {
			return o, fmt.Errorf("TLS cipher suite %q is unknown: choose among %s", name, strings.Join(secureNames(), ", "))
		}
		o.CipherSuites = append(o.CipherSuites, id)
	}
	return o, nil
}

func secureNames() []string {
	var out []string
	for _, s := range tls.CipherSuites() {
		out = append(out, s.Name)
	}
	return out
}

// apply sets the options on a server's TLS configuration.
func (o TLSOptions) apply(c *tls.Config) {
	c.MinVersion = max(o.MinVersion, tls.VersionTLS12)
	if len(o.CipherSuites) > 0 {
		c.CipherSuites = o.CipherSuites
	}
}
