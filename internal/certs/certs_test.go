package certs

import (
	"net"
	"strings"
	"testing"
	"time"
)

func TestNeedsRenewal(t *testing.T) {
	o := Options{DNSNames: []string{"multislice-webhook-service.multislice-system.svc"}, IPs: []net.IP{net.ParseIP("127.0.0.1")}}
	now := time.Now()
	data, err := generate(o, now)
	if err != nil {
		t.Fatal(err)
	}
	if NeedsRenewal(data, o, now) {
		t.Error("a fresh certificate needs renewal")
	}
	if !NeedsRenewal(data, o, now.Add(validity-RenewBefore+time.Hour)) {
		t.Error("a certificate inside the renewal window is kept")
	}
	wider := o
	wider.DNSNames = append(wider.DNSNames, "new-name.example")
	if !NeedsRenewal(data, wider, now) {
		t.Error("a certificate that lacks a name the server is reached by is kept")
	}
	delete(data, "tls.key")
	if !NeedsRenewal(data, o, now) {
		t.Error("a certificate without its key is kept")
	}
}

// A renewal keeps trusting the CA it replaces until that expires, so a
// replica still serving the old certificate is not refused meanwhile.
func TestRenewalTrustsThePreviousCA(t *testing.T) {
	o := Options{DNSNames: []string{"svc"}}
	now := time.Now()
	old, err := generate(o, now)
	if err != nil {
		t.Fatal(err)
	}
	later := now.Add(validity - RenewBefore + time.Hour)
	data, err := renewed(old, o, later)
	if err != nil {
		t.Fatal(err)
	}
	bundle := string(Bundle(data, later))
	if !strings.Contains(bundle, string(data["ca.crt"])) || !strings.Contains(bundle, string(old["ca.crt"])) {
		t.Error("the bundle after a renewal lacks the new or the previous CA")
	}
	if got := string(Bundle(data, now.Add(validity+time.Hour))); got != string(data["ca.crt"]) {
		t.Error("an expired previous CA is still trusted")
	}
	if got := string(Bundle(old, now)); got != string(old["ca.crt"]) {
		t.Error("a first certificate's bundle is not its CA alone")
	}
}
