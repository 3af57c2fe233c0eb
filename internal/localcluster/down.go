package localcluster

import (
	"fmt"
	"time"
)

// StopReport says what Down found and did for one component.
type StopReport struct {
	Process
	WasRunning bool
}

// Down stops every process the cluster in h started, newest first, waits
// until their ports are free, removes what its real hosts left on the
// machine (containers, mounts, cgroups, the pod bridge; sysctls restored),
// and forgets the cluster. Logs are kept.
func Down(h Home) ([]StopReport, error) {
	st, err := h.ReadState()
	if err != nil {
		return nil, err
	}
	if st == nil {
		return nil, h.cleanRealHosts() // an `up` that died before recording anything
	}
	var report []StopReport
	for i := len(st.Processes) - 1; i >= 0; i-- {
		p := st.Processes[i]
		r := StopReport{Process: p, WasRunning: p.alive()}
		p.stop(15 * time.Second)
		if r.WasRunning && !p.exited() {
			return report, fmt.Errorf("%s (pid %d) did not stop, even after SIGKILL", p.Name, p.PID)
		}
		report = append(report, r)
	}
	var busy []string
	deadline := time.Now().Add(5 * time.Second)
	for _, p := range st.Processes {
		for _, port := range p.Ports {
			for !portFree(port) && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if !portFree(port) {
				busy = append(busy, fmt.Sprintf("%d (%s)", port, p.Name))
			}
		}
	}
	if err := h.cleanRealHosts(); err != nil {
		return report, fmt.Errorf("every process stopped, but the real hosts' leftovers were not all removed: %w", err)
	}
	if err := removeKueueMetricsCerts(); err != nil {
		return report, err
	}
	if len(busy) > 0 {
		return report, fmt.Errorf("every process stopped, but ports %v are still in use by something else", busy)
	}
	return report, removeIfExists(h.statePath())
}

// StopComponent stops one running component of the cluster in h, e.g. a
// real host's kubelet to lose that host. It stays recorded: `up` starts
// it again.
func StopComponent(h Home, name string) error {
	st, err := h.ReadState()
	if err != nil {
		return err
	}
	if st == nil {
		return fmt.Errorf("no cluster is running in %s", h)
	}
	for _, p := range st.Processes {
		if p.Name == name {
			p.stop(15 * time.Second)
			return nil
		}
	}
	return fmt.Errorf("the cluster in %s has no component %s", h, name)
}
