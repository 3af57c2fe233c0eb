package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The same binary and commit time give the same digest; the image runs
// the manager as the non-root user.
func TestImageIsReproducible(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "multislice")
	if err := os.WriteFile(bin, []byte("#!binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	created := time.Unix(1700000000, 0).UTC()
	a, err := imageFor(bin, "linux", "arm64", "v1", "abc", created)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	b, err := imageFor(bin, "linux", "arm64", "v1", "abc", created)
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
	t.Logf("image config: user %s, entrypoint %v, cmd %v, labels %v", cfg.Config.User, cfg.Config.Entrypoint, cfg.Config.Cmd, cfg.Config.Labels)
	if cfg.Config.User != "65532:65532" || cfg.Config.Entrypoint[0] != "/multislice" || cfg.Architecture != "arm64" ||
		cfg.Config.Labels["org.opencontainers.image.revision"] != "abc" {
		t.Errorf("config %+v", cfg.Config)
	}
}
