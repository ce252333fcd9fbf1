// Package clusterstatus holds what every controller does the same way with a VitalsCluster: write its status
// (re-reading on conflict, never failing on a cluster that is gone), set a condition with a bounded message,
// and emit a bounded Event; and fence its status and finalizer writes (Fenced). One place, so that access, routegc, deorbit and flight report alike.
package clusterstatus
