// Package conncap caps the connections a server holds, and makes room for a new one rather than refusing it,
// so that clients that fill the cap (idle, silent, or churning) never lock out a probe or a report, and the
// server's memory stays bounded by the cap. The health server (package health) and the node agent's report
// socket (package agent) use it.
package conncap
