package localcluster

import (
	"fmt"
	"time"
)

// Heal restarts, with their recorded binary, arguments and ports, the
// components of a running cluster in h that have died (e.g. a manager
// killed with SIGKILL), and returns their names. The cluster's state lives
// in etcd and the API, so a restarted component picks up where the dead one
// stopped. A cluster with nothing alive is not healed: `up` starts afresh.
func Heal(h Home) ([]string, error) {
	st, err := h.ReadState()
	if err != nil || st == nil || !anyAlive(st.Processes) {
		return nil, err
	}
	var healed []string
	for i, p := range st.Processes {
		if p.alive() {
			continue
		}
		for _, port := range p.Ports {
			// A process killed a moment ago may still hold its sockets
			// while its last threads exit: give its ports a few seconds.
			deadline := time.Now().Add(10 * time.Second)
			for !portFree(port) && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if !portFree(port) {
				return healed, fmt.Errorf("cannot restart %s: its port %d is taken by another process; stop the cluster with `multislice down` and start it again", p.Name, port)
			}
		}
		s, err := start(p.Name, p.Binary, h.Log(p.Name), p.Args, p.Ports)
		if err != nil {
			return healed, err
		}
		st.Processes[i].PID = s.PID
		if err := h.writeState(st); err != nil {
			return healed, err
		}
		healed = append(healed, p.Name)
	}
	return healed, nil
}
