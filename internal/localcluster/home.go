// Package localcluster runs a real Kubernetes control plane on this machine:
// etcd, kube-apiserver, kube-scheduler, kube-controller-manager and kwok as
// child processes on 127.0.0.1, with TLS, generated credentials, and its
// state (kubeconfig, logs, pids) under $MULTISLICE_HOME.
package localcluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/multislice/multislice/internal/home"
)

// Home is the directory that holds one local cluster.
type Home string

// DefaultHome is $MULTISLICE_HOME, or ~/.multislice.
func DefaultHome() (Home, error) {
	d, err := home.Default()
	return Home(d), err
}

// At is the local cluster in a multislice home, e.g. At(f.Home()).
func At(d home.Dir, err error) (Home, error) { return Home(d), err }

// Kubeconfig is the admin kubeconfig users point kubectl at.
func (h Home) Kubeconfig() string { return home.Dir(h).Kubeconfig() }

// LogDir holds one log file per component.
func (h Home) LogDir() string { return filepath.Join(string(h), "logs") }

// Log is the log file of one component.
func (h Home) Log(component string) string { return filepath.Join(h.LogDir(), component+".log") }

func (h Home) path(parts ...string) string {
	return filepath.Join(append([]string{string(h)}, parts...)...)
}

func (h Home) statePath() string { return h.path("state.json") }

// Process is one component the cluster started.
type Process struct {
	Name   string   `json:"name"`
	PID    int      `json:"pid"`
	Binary string   `json:"binary"`
	Ports  []int    `json:"ports"`
	Args   []string `json:"args,omitempty"`
	// Env is added to the environment the process started with.
	Env []string `json:"env,omitempty"`
}

// State is what `up` records so that `status` and `down` find the cluster.
type State struct {
	APIServer string    `json:"apiServer"`
	Processes []Process `json:"processes"`
}

// ReadState returns the recorded state, or nil when no cluster was started.
func (h Home) ReadState() (*State, error) {
	data, err := os.ReadFile(h.statePath())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s is damaged (%v): stop any leftover processes by hand and delete it", h.statePath(), err)
	}
	return &s, nil
}

func (h Home) writeState(s *State) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := h.statePath() + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, h.statePath())
}
