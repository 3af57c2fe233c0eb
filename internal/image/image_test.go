package image

import (
	"os"
	"strings"
	"testing"
	"time"
)

// A static binary any machine of the project has: make packages installs it.
const staticBinary = "/usr/bin/busybox"

// The same binary and commit time give the same digest; the image runs
// the manager as the non-root user.
func TestImageIsReproducible(t *testing.T) {
	if _, err := os.Stat(staticBinary); err != nil {
		t.Skipf("%s: %v (make packages installs busybox-static)", staticBinary, err)
	}
	l := Labels{Version: "v1", Revision: "abc", Created: time.Unix(1700000000, 0).UTC()}
	a, err := ForBinary(staticBinary, "linux", "arm64", l)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	b, err := ForBinary(staticBinary, "linux", "arm64", l)
	if err != nil {
		t.Fatal(err)
	}
	da, _ := a.Digest()
	db, _ := b.Digest()
	if da != db {
		t.Errorf("digests differ: %s, %s", da, db)
	}
	cfg, err := a.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != "65532:65532" || cfg.Config.Entrypoint[0] != "/multislice" || cfg.Architecture != "arm64" ||
		cfg.Config.Labels["org.opencontainers.image.revision"] != "abc" {
		t.Errorf("config %+v", cfg.Config)
	}
}

func TestDynamicBinaryRefused(t *testing.T) {
	_, err := ForBinary("/bin/ls", "linux", "amd64", Labels{})
	if err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("a dynamically linked binary: %v, want a refusal that says how to build it", err)
	}
}
