package pass

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// RepeatLogEvery is how often an unchanged failure of a cluster's passes is logged again at the default
// level: a cloud that stays down for an hour gives a line when it goes down, one every RepeatLogEvery
// while it stays down, and one for each change of its error (the others go to V(1)).
const RepeatLogEvery = 10 * time.Minute

// repeats remembers, per cluster, the failure last logged at the default level and when.
type repeats struct {
	mu   sync.Mutex
	last map[types.NamespacedName]logged
}

type logged struct {
	msg string
	at  time.Time
}

// fresh reports whether msg is worth a line at the default level for key at now: it differs from the
// last one logged, or that one is RepeatLogEvery old. A fresh message is remembered.
func (r *repeats) fresh(key types.NamespacedName, msg string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l, ok := r.last[key]; ok && l.msg == msg && now.Sub(l.at) < RepeatLogEvery {
		return false
	}
	if r.last == nil {
		r.last = map[types.NamespacedName]logged{}
	}
	r.last[key] = logged{msg, now}
	return true
}

// drop forgets key: its next failure is logged (after a complete pass, or when the cluster is gone).
func (r *repeats) drop(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.last, key)
}
