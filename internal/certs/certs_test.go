package certs

import (
	"net"
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
