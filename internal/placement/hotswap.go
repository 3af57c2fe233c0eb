package placement

import (
	"maps"
	"sort"
)

// Holder is what hot-swap needs to know about a JobSet that holds domains.
type Holder struct {
	Priority int32
	// Protected: the JobSet opted out of hot-swap; its domains are never taken.
	Protected bool
	// Taken: an earlier hot-swap took it already; its domains are freeing,
	// so taking them costs nothing more (it is not a second victim).
	Taken bool
	// Attempt is its current attempt (status.restarts): the one a swap ends.
	Attempt int32
}

// Swap is a hot-swap: the domains the request gets, and the JobSets that
// must give theirs up for it.
type Swap struct {
	Domains map[string]string
	// Victims are the JobSets (namespace/name) newly taken, in the order
	// chosen; Freeing those an earlier swap took whose domains it uses.
	Victims, Freeing []string
	// Taken are, per victim or freeing JobSet, the domains the request gets of it.
	Taken map[string][]string
}

// HotSwap finds, for a request that fits no free domain, the JobSets of
// strictly lower priority whose domains would make it fit: a victim gives
// up every domain it holds (all or none, like the gang it is), and the
// choice is the lowest priority first, then the fewest victims, then the
// fewest hosts. Domains a protected JobSet, a workload that is not a
// JobSet, or a JobSet of equal or higher priority holds are never taken.
// It is greedy where an exact search would be exponential: single victims
// first, else victims added in that order until it fits, then any victim
// the fit does not need dropped, the highest priority first. ok is false
// when no choice fits.
func HotSwap(me Waiter, mine map[string]string, s Snapshot, holders map[string]Holder) (Swap, bool) {
	domains := MarkHolders(s.Domains, s.Held, me.JobSet, mine, me.Request)
	hosts := map[string]int{}
	for _, d := range domains {
		if _, ok := holders[d.Holder]; ok {
			hosts[d.Holder] += len(d.Nodes)
		}
	}
	var freeing, candidates []string
	for js := range hosts {
		h := holders[js]
		switch {
		case js == me.JobSet || h.Protected || h.Priority >= me.Priority:
		case h.Taken:
			freeing = append(freeing, js)
		default:
			candidates = append(candidates, js)
		}
	}
	sort.Strings(freeing)
	sort.Slice(candidates, func(i, j int) bool {
		a, b := candidates[i], candidates[j]
		if pa, pb := holders[a].Priority, holders[b].Priority; pa != pb {
			return pa < pb
		}
		if hosts[a] != hosts[b] {
			return hosts[a] < hosts[b]
		}
		return a < b
	})
	try := func(victims []string) map[string]string {
		free := map[string]bool{}
		for _, v := range append(append([]string(nil), freeing...), victims...) {
			free[v] = true
		}
		freed := make([]Domain, len(domains))
		for i, d := range domains {
			freed[i] = d
			if free[d.Holder] {
				freed[i].Holder = ""
			}
		}
		return Assign(me.Request, freed).Domains
	}
	swap := func(victims []string, got map[string]string) (Swap, bool) {
		s := Swap{Domains: got, Taken: map[string][]string{}}
		var taken map[string][]string
		// A victim whose domains the final choice does not use keeps them.
		s.Victims, taken = used(victims, got, domains)
		maps.Copy(s.Taken, taken)
		s.Freeing, taken = used(freeing, got, domains)
		maps.Copy(s.Taken, taken)
		return s, true
	}
	if got := try(nil); got != nil {
		return swap(nil, got)
	}
	for _, v := range candidates {
		if got := try([]string{v}); got != nil {
			return swap([]string{v}, got)
		}
	}
	var victims []string
	var got map[string]string
	for _, v := range candidates {
		victims = append(victims, v)
		if got = try(victims); got != nil {
			break
		}
	}
	if got == nil {
		return Swap{}, false
	}
	for i := len(victims) - 1; i >= 0; i-- {
		fewer := append(append([]string(nil), victims[:i]...), victims[i+1:]...)
		if g := try(fewer); g != nil {
			victims, got = fewer, g
		}
	}
	return swap(victims, got)
}

// used keeps the JobSets among js that hold one of the domains got
// assigns, with those domains (sorted).
func used(js []string, got map[string]string, domains []Domain) ([]string, map[string][]string) {
	holder := map[string]string{}
	for _, d := range domains {
		holder[d.Value] = d.Holder
	}
	uses := map[string][]string{}
	for _, d := range got {
		uses[holder[d]] = append(uses[holder[d]], d)
	}
	var out []string
	taken := map[string][]string{}
	for _, j := range js {
		if len(uses[j]) > 0 {
			out = append(out, j)
			taken[j] = uses[j]
			sort.Strings(taken[j])
		}
	}
	return out, taken
}
