// Package home finds the multislice home, $MULTISLICE_HOME (default
// ~/.multislice): the local cluster's directory, whose kubeconfig is the
// default cluster of every command. The local cluster itself
// (internal/localcluster) keeps its other files there.
package home

import (
	"fmt"
	"os"
	"path/filepath"
)

// Dir is a multislice home.
type Dir string

// Default is $MULTISLICE_HOME, or ~/.multislice.
func Default() (Dir, error) {
	if h := os.Getenv("MULTISLICE_HOME"); h != "" {
		abs, err := filepath.Abs(h)
		return Dir(abs), err
	}
	dir, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cannot find a home directory: set MULTISLICE_HOME: %w", err)
	}
	return Dir(filepath.Join(dir, ".multislice")), nil
}

// Kubeconfig is the admin kubeconfig users point kubectl at.
func (d Dir) Kubeconfig() string { return filepath.Join(string(d), "kubeconfig") }
