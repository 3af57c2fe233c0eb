package jobset

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// deleteMemory is how long a Job this manager deleted is not deleted
// again while its cache still shows it undeleted.
const deleteMemory = 30 * time.Second

// recentDeletes are the Jobs this manager deleted in the last
// deleteMemory, by UID. Until the cache sees a deletion, every reconcile
// of a restarting JobSet (one per Job or pod event) decided it again:
// 118-164 deletes of 64 Jobs in a 1,024-pod restart. Memory only: a
// restarted manager deletes such a Job once more, which is harmless.
type recentDeletes struct {
	mu     sync.Mutex
	at     map[types.UID]time.Time
	pruned time.Time // the last time what is older was forgotten
}

// seen reports whether uid was deleted within deleteMemory of now.
func (d *recentDeletes) seen(uid types.UID, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	at, ok := d.at[uid]
	return ok && now.Sub(at) < deleteMemory
}

// note remembers that uid was deleted at now; once per deleteMemory it
// forgets what is older.
func (d *recentDeletes) note(uid types.UID, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.at == nil {
		d.at = map[types.UID]time.Time{}
	}
	if now.Sub(d.pruned) >= deleteMemory {
		for u, at := range d.at {
			if now.Sub(at) >= deleteMemory {
				delete(d.at, u)
			}
		}
		d.pruned = now
	}
	d.at[uid] = now
}
