package manager

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// Every flag set to something other than its default survives Args: a
// manager started with f.Args() runs with f.
func TestFlagsArgsRoundTrip(t *testing.T) {
	var f Flags
	fl := pflag.NewFlagSet("f", pflag.ContinueOnError)
	f.Bind(fl)
	other := map[string]string{"bool": "", "duration": "3s", "int": "7", "float32": "1.5", "string": "x"}
	fl.VisitAll(func(v *pflag.Flag) {
		val := other[v.Value.Type()]
		if v.Value.Type() == "bool" {
			val = map[string]string{"true": "false", "false": "true"}[v.DefValue]
		}
		if err := fl.Set(v.Name, val); err != nil || v.Value.String() == v.DefValue {
			t.Fatalf("--%s: cannot give it a value other than its default %q (%v)", v.Name, v.DefValue, err)
		}
	})
	args := f.Args()
	if n := countFlags(fl); len(args) != n {
		t.Fatalf("Args gives %d flags, the manager has %d: %v", len(args), n, args)
	}
	var g Flags
	gl := pflag.NewFlagSet("g", pflag.ContinueOnError)
	g.Bind(gl)
	if err := gl.Parse(args); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f, g) {
		t.Fatalf("parsed back:\n%+v\nwant\n%+v", g, f)
	}
}

func TestFlagsArgsOnlyWhatDiffers(t *testing.T) {
	f := DefaultFlags()
	if args := f.Args(); len(args) != 0 {
		t.Fatalf("defaults give %v", args)
	}
	f.LeaderElect, f.WebhookPort, f.Gates = false, 1234, "InPlaceRestart=true"
	want := "--feature-gates=InPlaceRestart=true --leader-elect=false --webhook-port=1234"
	if got := strings.Join(f.Args(), " "); got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
}

func TestFlagsComplete(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Flags)
		err  string
	}{
		{"defaults", func(*Flags) {}, ""},
		{"controllers off", func(f *Flags) { f.Controllers = "none" }, ""},
		{"both off", func(f *Flags) { f.Controllers, f.Webhooks = "none", "none" }, "--controllers=none and --webhooks=none leave nothing to run"},
		{"bad switch", func(f *Flags) { f.Webhooks = "some" }, `--webhooks="some": want all or none`},
		{"bad gate", func(f *Flags) { f.Gates = "NoSuchGate=true" }, "NoSuchGate"},
		{"agent timeout too short", func(f *Flags) { f.AgentTimeout = 0 }, "--in-place-restart-timeout=0s: want 1s to 1h"},
		{"no grace", func(f *Flags) { f.SliceGrace = 0 }, ""},
		{"negative grace", func(f *Flags) { f.SliceGrace = -time.Second }, "--slice-notready-grace=-1s: want 0s to 1h"},
		{"workers typo", func(f *Flags) { f.Workers = 80000 }, "--workers=80000: want 1 to 256"},
		{"no rate", func(f *Flags) { f.QPS = 0 }, "--kube-api-qps=0"},
		{"renew deadline past the lease", func(f *Flags) { f.RenewDeadline = 10 * time.Second }, "--leader-elect-renew-deadline=10s < --leader-elect-lease-duration=8s must hold"},
		{"timings unchecked without leader election", func(f *Flags) { f.LeaderElect, f.RenewDeadline = false, 10*time.Second }, ""},
		{"TLS 1.3 only", func(f *Flags) { f.TLSMinVersion = "VersionTLS13" }, ""},
		{"TLS 1.1 refused", func(f *Flags) { f.TLSMinVersion = "VersionTLS11" }, `--tls-min-version/--tls-cipher-suites: TLS minimum version "VersionTLS11": want VersionTLS12 or VersionTLS13`},
		{"strong suites", func(f *Flags) {
			f.TLSCiphers = "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"
		}, ""},
		{"weak suite refused", func(f *Flags) { f.TLSCiphers = "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_RSA_WITH_RC4_128_SHA" }, "TLS cipher suite TLS_RSA_WITH_RC4_128_SHA is weak and refused"},
		{"unknown suite refused", func(f *Flags) { f.TLSCiphers = "TLS_FAST" }, `TLS cipher suite "TLS_FAST" is unknown`},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := DefaultFlags()
			f.Kubeconfig = "testdata/none" // never read: errors come first
			c.edit(&f)
			_, _, err := f.Complete()
			switch {
			case c.err == "" && err != nil && !strings.Contains(err.Error(), "--kubeconfig"):
				t.Fatalf("unexpected error %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("error %v, want %q", err, c.err)
			}
		})
	}
}

func countFlags(fl *pflag.FlagSet) (n int) {
	fl.VisitAll(func(*pflag.Flag) { n++ })
	return n
}
