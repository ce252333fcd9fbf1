package version

import (
	"runtime"
	"runtime/debug"
)

// Info describes a binary: its version and commit, the Go toolchain that built it and the versions of
// the client libraries that decide what it can talk to.
type Info struct {
	Version string `json:"version"`
	// Commit is the VCS revision the binary was built from ("" when the build did not record it).
	Commit     string `json:"commit,omitempty"`
	CommitTime string `json:"commitTime,omitempty"`
	// Modified: the working tree had uncommitted changes.
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
	// Kubernetes is the version of the Kubernetes client library (k8s.io/client-go) linked in.
	Kubernetes string `json:"kubernetes,omitempty"`
	// Gophercloud is the version of the OpenStack client library linked in ("": none, as in the node
	// agent).
	Gophercloud string `json:"gophercloud,omitempty"`
}

// Modules whose versions Info reports.
const (
	clientGoModule    = "k8s.io/client-go"
	gophercloudModule = "github.com/gophercloud/gophercloud/v2"
)

// Get describes the running binary.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	in := FromBuildInfo(Version, bi)
	if Commit != "" {
		in.Commit, in.CommitTime, in.Modified = Commit, "", false
	}
	return in
}

// FromBuildInfo describes a binary of version v (the -X value; "dev" when unset) built as bi (nil: no
// build information).
func FromBuildInfo(v string, bi *debug.BuildInfo) Info {
	in := Info{Version: v, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
		return in
	}
	if bi.GoVersion != "" {
		in.GoVersion = bi.GoVersion
	}
	if (in.Version == "" || in.Version == "dev") && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		in.Version = bi.Main.Version // go install module@version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Commit = s.Value
		case "vcs.time":
			in.CommitTime = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	for _, d := range bi.Deps {
		m := d
		if d.Replace != nil {
			m = d.Replace
		}
		switch d.Path {
		case clientGoModule:
			in.Kubernetes = m.Version
		case gophercloudModule:
			in.Gophercloud = m.Version
		}
	}
	return in
}

// Line is the one-line form of --version: "v1.2.3 (commit 0123abc, go1.26.8)"; the commit is marked
// (modified) when the tree had changes, and left out when the build did not record it.
func (in Info) Line() string {
	s := in.Version + " ("
	if in.Commit != "" {
		s += "commit " + in.Commit
		if in.Modified {
			s += " (modified)"
		}
		s += ", "
	}
	return s + in.GoVersion + ")"
}
