// Package sharding spreads the VitalsClusters over N active operator replicas.
//
// The 64-bit FNV-1a hash space of the clusters' UIDs (the hash of Kubernetes' server-side sharded list and
// watch, KEP-5866) is cut into a fixed number of equal ranges (a power of two, 16 by default). Every replica
// holds one Lease as a member (its presence) and one Lease per range it owns; both kinds carry the label
// LabelRole, so that `kubectl get leases -l vitals.vitalsproject.io/shard-role` shows who is there and who
// holds what.
//
// Each replica computes the same balanced assignment of ranges to the live members (Assign) and moves
// towards it: it releases the ranges it holds beyond its share and takes the free or expired ones that are
// its own. A range changes hands only once its previous owner released it or its Lease expired:
//
//   - The owner acts on a range only while the last successful renewal it sent, plus the lease duration,
//     minus a safety margin, lies in the future (fencing). The margin bounds one action that was allowed just
//     before: it must exceed the longest single action (one API call, bounded by its client's timeout).
//   - A replica that gives a range up stops acting on it at once and writes the release only a safety margin
//     later.
//   - Another replica takes an unreleased range only when it has seen its Lease unchanged for a whole lease
//     duration on its own clock (as client-go's leader election does): clock offsets between replicas do not
//     matter, only their rates.
//
// Holds(uid) is the fenced answer every action is gated on (the remediation policy asks it), and Validity(uid)
// the end of that fenced validity, which bounds every write (package fencing). Leader gives the single replica
// of leader election the same: a wrapper of the elector's resource lock that records when each successful
// renewal was sent. The informers
// of the VitalsClusters follow the held ranges through ListWatch: they ask the API server for those ranges
// only (ListOptions.shardSelector) where it serves the ShardedListAndWatch feature gate, and filter with the
// same hash in any case, so that an API server without the gate (which ignores the selector) still gives
// each replica its own clusters only. When the held ranges change, the watch ends with "resource version
// expired" and the informer lists again: clusters that left disappear from the replica's cache (its
// controllers see them as gone and drop their clients), clusters that arrived are added.
package sharding
