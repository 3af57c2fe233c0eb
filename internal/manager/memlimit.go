package manager

import (
	"log/slog"

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
