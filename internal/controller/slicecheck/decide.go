// Package slicecheck is GKE's slice controller as a Kueue admission check
// (AdmissionCheck spec.controllerName accelerator.gke.io/slice), in the
// open: a Workload of a ClusterQueue with such a check is admitted only
// once the Slices of its JobSet are formed, from the hosts Kueue's
// topology-aware scheduling (TAS) chose for its pods, and Ready. When they
// cannot form, or one fails, the check is set to Retry with why, and Kueue
// evicts and requeues the Workload: its next hosts make new Slices. The
// decision is pure (decide.go); check.go reads and writes the cluster,
// kueue.go reads Kueue's objects.
package slicecheck

import (
	"fmt"
	"slices"
	"strings"

	"github.com/multislice/multislice/internal/slicing"
	"github.com/multislice/multislice/internal/tpu"
)

// Kueue's states of an admission check on a Workload.
const (
	Pending = "Pending"
	Ready   = "Ready"
	Retry   = "Retry"
)

// Observed is what one decision about a Workload's check sees.
type Observed struct {
	// State is the check's state on the Workload.
	State string
	// QuotaReserved: Kueue reserved quota (and chose hosts) for it.
	QuotaReserved bool
	// Wants are the JobSet's dynamic-slice Jobs, in order.
	Wants []Want
	// Slices are the JobSet's Slices, by Job name.
	Slices map[string]Slice
	// Nodes are the sub-blocks' hosts, by host name.
	Nodes map[string]slicing.Host
}

// Want is one Job that asks for a dynamic slice, with the hosts Kueue
// gave its pods in rank order (nil: Kueue chose no topology for it).
type Want struct {
	Job      string
	Topology tpu.Topology
	Hosts    []string
}

// Slice is one Slice of the JobSet as the check sees it.
type Slice struct {
	Name          string
	Partitions    []string
	Ready, Failed bool
	// ForKueue: the check formed it (for an admission of the Workload).
	ForKueue bool
	Message  string
}

// Decision is what to do: Slices to form and to delete, and the check's
// new state with its message ("": leave it as it is).
type Decision struct {
	Form           []Formed
	Delete         []string
	State, Message string
}

// Formed is a Slice to create for a Job.
type Formed struct {
	Want     slicing.Want
	Cubes    []string
	Quarters uint8
}

// Decide judges the check of one Workload.
func Decide(o Observed) Decision {
	if !o.QuotaReserved {
		// Evicted, or not reserved yet: the Slices formed for an
		// admission that is gone go; a new reservation's hosts make new ones.
		return Decision{Delete: forKueue(o.Slices)}
	}
	if len(o.Wants) == 0 {
		return settle(o, Ready, "the JobSet asks for no dynamic slice")
	}
	switch o.State {
	case Pending:
		return pending(o)
	case Ready:
		// Slices the JobSet controller formed (Kueue chose no hosts) it
		// forms again itself.
		if why := failed(o, true); why != "" {
			return Decision{State: Retry, Message: why + "; Kueue requeues the Workload, and the hosts it chooses next make new Slices"}
		}
	}
	return Decision{}
}

// pending forms the Slices Kueue's hosts make, all of them or none, and
// passes the check once every one is Ready.
func pending(o Observed) Decision {
	if why := failed(o, false); why != "" {
		return Decision{State: Retry, Message: why}
	}
	var d Decision
	var ready []string
	forming := 0
	for _, w := range o.Wants {
		s, ok := o.Slices[w.Job]
		switch {
		case !ok && w.Hosts == nil:
			return Decision{State: Ready, Message: fmt.Sprintf("Kueue chose no hosts for Job %s (no topology-aware scheduling): the manager forms its Slices when the JobSet starts", w.Job)}
		case !ok:
			cubes, quarters, err := slicing.FromHosts(w.Topology, w.Hosts, o.Nodes)
			if err != nil {
				return Decision{State: Retry, Message: fmt.Sprintf("the hosts Kueue chose for Job %s make no %s slice: %v", w.Job, w.Topology, err)}
			}
			d.Form = append(d.Form, Formed{Want: slicing.Want{Name: w.Job, Topology: w.Topology}, Cubes: cubes, Quarters: quarters})
		case !s.Ready:
			forming++
		default:
			ready = append(ready, fmt.Sprintf("%s (%s)", s.Name, strings.Join(s.Partitions, "+")))
		}
	}
	if len(d.Form) > 0 || forming > 0 {
		return d
	}
	return Decision{State: Ready, Message: "Slices Ready: " + abbreviate(ready)}
}

// toForm: a Job Kueue gave hosts has no Slice yet (then Decide needs the
// sub-blocks' hosts).
func (o Observed) toForm() bool {
	for _, w := range o.Wants {
		if _, ok := o.Slices[w.Job]; !ok && w.Hosts != nil {
			return true
		}
	}
	return false
}

// failed names the first failed Slice of a wanted Job (of those the
// check formed, if onlyKueue), and why.
func failed(o Observed, onlyKueue bool) string {
	for _, w := range o.Wants {
		if s, ok := o.Slices[w.Job]; ok && s.Failed && (s.ForKueue || !onlyKueue) {
			return fmt.Sprintf("Slice %s failed: %s", s.Name, s.Message)
		}
	}
	return ""
}

// settle sets the check to state unless it is there already.
func settle(o Observed, state, msg string) Decision {
	if o.State == state {
		return Decision{}
	}
	return Decision{State: state, Message: msg}
}

// forKueue are the Slices the check formed, by name.
func forKueue(all map[string]Slice) []string {
	var out []string
	for _, s := range all {
		if s.ForKueue {
			out = append(out, s.Name)
		}
	}
	slices.Sort(out)
	return out
}

func abbreviate(items []string) string {
	slices.Sort(items)
	if len(items) > 4 {
		return strings.Join(items[:4], ", ") + fmt.Sprintf(", ... (%d in all)", len(items))
	}
	return strings.Join(items, ", ")
}
