// Package version holds the version of Vitals' binaries, set at build time:
//
//	go build -ldflags "-X github.com/vitalsproject/vitals/internal/base/version.Version=v1.2.3" ./cmd/...
//
// It is its own package so that every binary (vitals, vitals-agent) links the one variable and nothing
// else of the command line.
package version

// Version of the binary; "dev" when not set at build time.
var Version = "dev"

// Commit the binary was built from, set at build time (make sets it); "" takes the revision Go recorded
// from the version control system, if any.
var Commit = ""
