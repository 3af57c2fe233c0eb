package placement

import (
	"fmt"
	"sort"
	"time"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
)

// Waiter is a JobSet waiting for domains: its request, and its rank.
type Waiter struct {
	JobSet   string // namespace/name
	Key      string // the exclusive-topology key it wants domains of
	Priority int32
	Created  time.Time
	Request  Request
}

// Before says whether w is served before o: higher priority first, then
// the older one (first come, first served).
func (w Waiter) Before(o Waiter) bool {
	if w.Priority != o.Priority {
		return w.Priority > o.Priority
	}
	return w.Created.Before(o.Created)
}

// Snapshot is what one placement decision sees: the domains of the
// JobSet's key (with their nodes and health, from the cluster), who holds
// which domain (every JobSet's pinned Jobs), and who waits.
type Snapshot struct {
	Domains []Domain
	// Held is, per JobSet, its Jobs' domains by Job name.
	Held map[string]map[string]string
	// Waiting are the JobSets waiting for domains, this one included or not.
	Waiting []Waiter
}

// Decide places one JobSet: the request's Jobs get domains at once (all or
// none), unless a JobSet that ranks before it waits for the same kind of
// domains and could fit once they free up: then it waits behind that one,
// so that a big JobSet is not starved by a stream of small ones. Mine are
// this JobSet's own pins (Job name -> domain), also those of Jobs outside
// the request: a domain is never given to a second Job of one JobSet.
func Decide(me Waiter, mine map[string]string, s Snapshot) Result {
	domains := MarkHolders(s.Domains, s.Held, me.JobSet, mine, me.Request)
	result := Assign(me.Request, domains)
	if result.Domains != nil {
		if ahead := AheadOf(me, s.Waiting, domains); ahead != "" {
			return Result{Why: "waiting behind " + ahead + ", which comes first (higher priority or older)"}
		}
	}
	if result.Domains == nil && len(domains) == 0 {
		result.Why = fmt.Sprintf("no node has the label %s (named by %s): nothing fits until nodes carry it; the usual key is %s",
			me.Key, api.ExclusiveKey, gke.NodePoolLabel)
	}
	return result
}

// MarkHolders returns a copy of domains with each one's holder: other
// JobSets' pinned Jobs, and this JobSet's own Jobs that are not part of its
// request (e.g. the Jobs that stay when it scales up). A domain already
// marked (a pin read from the cluster) keeps its holder.
func MarkHolders(domains []Domain, held map[string]map[string]string, me string, mine map[string]string, req Request) []Domain {
	holder := map[string]string{}
	for js, jobs := range held {
		if js == me {
			continue
		}
		for _, d := range jobs {
			holder[d] = js
		}
	}
	requested := map[string]bool{}
	for _, j := range req.Jobs {
		requested[j.Name] = true
	}
	for job, d := range mine {
		if !requested[job] {
			holder[d] = me + " (its Job " + job + ")"
		}
	}
	out := make([]Domain, len(domains))
	copy(out, domains)
	for i := range out {
		if h, ok := holder[out[i].Value]; ok {
			out[i].Holder = h
		}
	}
	return out
}

// AheadOf names the first waiting JobSet that must be served before me:
// it ranks before me, wants domains of the same key, and its request
// would fit if every domain were free. "" when none.
func AheadOf(me Waiter, waiting []Waiter, domains []Domain) string {
	var ahead []Waiter
	for _, o := range waiting {
		if o.JobSet != me.JobSet && o.Key == me.Key && o.Before(me) {
			ahead = append(ahead, o)
		}
	}
	sort.Slice(ahead, func(i, j int) bool { return ahead[i].Before(ahead[j]) })
	free := make([]Domain, len(domains))
	for i, d := range domains {
		free[i] = d
		free[i].Holder = ""
	}
	for _, o := range ahead {
		if Assign(o.Request, free).Domains != nil {
			return o.JobSet
		}
	}
	return ""
}
