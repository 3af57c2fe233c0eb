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
	"flag"
	"fmt"
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

	msimage "github.com/multislice/multislice/internal/image"
)

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
		img, err := msimage.ForBinary(bin, osName, arch, msimage.Labels{Version: version, Revision: revision, Created: created})
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

// build compiles a static, trimmed manager binary (./cmd/multislice-manager:
// the image's commands without the CLI; /multislice in the image, as the
// pods that run its agent or stand-in name it): no cgo, no paths of this
// machine, no build ID, so the bytes depend on the source alone.
func build(bin, osName, arch, version string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags", "-s -w -buildid= -X github.com/multislice/multislice/internal/versions.Multislice="+version,
		"-o", bin, "./cmd/multislice-manager")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+osName, "GOARCH="+arch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build %s/%s: %w", osName, arch, err)
	}
	return nil
}
