// Command image builds the Multislice image without a container engine:
// the static multislice binary for each platform in an otherwise empty
// image, run as a non-root user, no shell. It writes an OCI layout (one
// index, every platform) and, per platform, a tarball `docker load` reads.
// The same commit gives the same digests: the build is trimmed and
// stamped, file times and the creation time come from the commit.
//
//	go run ./hack/image -image ghcr.io/you/multislice:v0.1.0 -version v0.1.0 -revision $(git rev-parse HEAD) -out dist
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// nonRoot is the user the manager runs as (distroless's "nonroot").
const nonRoot = 65532

func main() {
	image := flag.String("image", "multislice:dev", "image reference the tarballs are tagged with")
	version := flag.String("version", "dev", "version label")
	revision := flag.String("revision", "", "source revision label (git commit)")
	created := flag.Int64("created", 0, "creation time, Unix seconds (the commit's time keeps builds reproducible)")
	out := flag.String("out", "dist", "output directory")
	platforms := flag.String("platforms", "linux/amd64,linux/arm64", "comma-separated os/arch list")
	flag.Parse()
	if err := run(*image, *version, *revision, time.Unix(*created, 0).UTC(), *out, strings.Split(*platforms, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(image, version, revision string, created time.Time, out string, platforms []string) error {
	ref, err := name.ParseReference(image)
	if err != nil {
		return fmt.Errorf("-image %q: %w", image, err)
	}
	index := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, platform := range platforms {
		osName, arch, ok := strings.Cut(platform, "/")
		if !ok {
			return fmt.Errorf("-platforms: %q is not os/arch", platform)
		}
		bin := filepath.Join(out, "bin", osName+"-"+arch, "multislice")
		if err := build(bin, osName, arch, version); err != nil {
			return err
		}
		img, err := imageFor(bin, osName, arch, version, revision, created)
		if err != nil {
			return err
		}
		tar := filepath.Join(out, fmt.Sprintf("multislice-%s-%s.tar", osName, arch))
		if err := tarball.WriteToFile(tar, ref, img); err != nil {
			return err
		}
		digest, err := img.Digest()
		if err != nil {
			return err
		}
		fmt.Printf("%s %s  %s (docker load -i %s)\n", platform, digest, image, tar)
		index = mutate.AppendManifests(index, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: osName, Architecture: arch}},
		})
	}
	dir := filepath.Join(out, "oci")
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if _, err := layout.Write(dir, index); err != nil {
		return err
	}
	digest, err := index.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("index %s  %s (OCI layout; push with: crane push %s %s)\n", digest, dir, dir, image)
	return nil
}

// build compiles a static, trimmed multislice binary: no cgo, no paths of
// this machine, no build ID, so the bytes depend on the source alone.
func build(bin, osName, arch, version string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags", "-s -w -buildid= -X github.com/multislice/multislice/internal/versions.Multislice="+version,
		"-o", bin, "./cmd/multislice")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+osName, "GOARCH="+arch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build %s/%s: %w", osName, arch, err)
	}
	return nil
}

// imageFor is one layer (/multislice and an empty /tmp) with the manager
// as entrypoint.
func imageFor(bin, osName, arch, version, revision string, created time.Time) (v1.Image, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	entries := []struct {
		hdr  tar.Header
		body []byte
	}{
		{tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777}, nil},
		{tar.Header{Name: "multislice", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(data))}, data},
	}
	for _, e := range entries {
		e.hdr.ModTime, e.hdr.Uid, e.hdr.Gid, e.hdr.Format = created, 0, 0, tar.FormatPAX
		if err := tw.WriteHeader(&e.hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layerBytes := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Created = osName, arch, v1.Time{Time: created}
	cfg.Config.Entrypoint = []string{"/multislice"}
	cfg.Config.Cmd = []string{"manager"}
	cfg.Config.User = fmt.Sprintf("%d:%d", nonRoot, nonRoot)
	cfg.Config.WorkingDir = "/"
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.title":    "multislice",
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.revision": revision,
		"org.opencontainers.image.source":   "https://github.com/multislice/multislice",
	}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, err
	}
	return mutate.CreatedAt(img, v1.Time{Time: created})
}
