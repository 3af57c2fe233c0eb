// Command release writes install.yaml (see internal/release).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/multislice/multislice/internal/release"
)

func main() {
	image := flag.String("image", "", "the manager's image reference (required)")
	out := flag.String("out", "dist/install.yaml", "file to write")
	dir := flag.String("kustomization", "config/default", "kustomization to build")
	flag.Parse()
	manifest, err := release.Install(*dir, *image)
	if err == nil {
		err = os.WriteFile(*out, manifest, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
