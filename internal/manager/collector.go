package manager

import (
	"log/slog"
	"os"
	"runtime/debug"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"
)

// memoryLimitRatio is the share of the container's memory limit the Go
// runtime is told to stay under, leaving the rest to what it does not
// count (the binary's pages, the kernel's buffers for its sockets).
const memoryLimitRatio = 0.9

// SetMemoryLimit gives the Go runtime a soft memory limit of 90% of the
// manager's cgroup memory limit (its container's), so that near the limit
// the collector runs more often instead of the kernel killing the
// manager: a relist after a long outage briefly holds the old and the new
// cache at once. By default the heap grows to twice what is live, and the
// runtime does not read the cgroup itself. GOMEMLIMIT, when set, wins;
// AUTOMEMLIMIT=off leaves the runtime alone, AUTOMEMLIMIT=0.8 sets
// another share. With no limit (a host process, the local cluster) nothing
// changes. The limit is logged; failing to read it is logged, not fatal.
func SetMemoryLimit(log logr.Logger) {
	_, _ = memlimit.Set(memlimit.WithRatio(memoryLimitRatio), memlimit.WithProvider(memlimit.FromCgroup),
		memlimit.WithLogger(slog.New(logr.ToSlogHandler(log.WithName("memory-limit")))))
}

// gcPercent is the manager's GOGC. Most of its heap is its caches, which
// live as long as it does, so Go's default (100) lets the heap grow by
// that much again between collections. At 5,120 simulated hosts 50 kept
// the manager's RSS at 89 MiB at a round's end where 100 reached 103-104
// MiB, for twice the collections and a tenth more CPU (docs/performance.md).
const gcPercent = 50

// SetGCPercent sets the collector's target to gcPercent, unless GOGC is
// set in the manager's environment, which wins.
func SetGCPercent() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
}
