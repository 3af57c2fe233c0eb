package localcluster

import (
	"errors"
	"os"
)

// ComponentStatus is one component as `status` shows it.
type ComponentStatus struct {
	Process
	Running  bool   `json:"running"`
	RSSBytes int64  `json:"rssBytes"`
	Log      string `json:"log"`
}

// Components reports each recorded component; nil when no cluster exists.
func (h Home) Components() ([]ComponentStatus, error) {
	st, err := h.ReadState()
	if err != nil || st == nil {
		return nil, err
	}
	out := make([]ComponentStatus, 0, len(st.Processes))
	for _, p := range st.Processes {
		c := ComponentStatus{Process: p, Running: p.alive(), Log: h.Log(p.Name)}
		if c.Running {
			c.RSSBytes = p.rssBytes()
		}
		out = append(out, c)
	}
	return out, nil
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
