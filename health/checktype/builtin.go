package checktype

import "github.com/vitalsproject/vitals/health/checks"

// Options shared by several types.
var (
	caFile   = Option{Name: "ca_file", Arg: "FILE", Doc: "PEM bundle that replaces the system roots", Aliases: []Alias{{Name: "cacert", Deprecated: true}}}
	insecure = Option{Name: "insecure", Kind: Bool, Doc: "skip verification of the server's certificate", Aliases: []Alias{{Name: "k"}}}
	cmdline  = Option{Name: "cmdline", Kind: Bool, Doc: "match PROCESS anywhere in the command line, like pgrep -f"}
)

// Builtin returns the check types of package checks, which every frontend offers (the
// in-process ones only where a process lives long enough to measure itself). Each is declared in
// a file of its own.
func Builtin() []Type {
	return []Type{
		httpType(),
		vitalsType(),
		tcpType(),
		portType(),
		listenType(),
		socketType(),
		processType(),
		fileType(),
		execType(),
		capabilityType(),
		memoryType(),
		goroutinesType(),
	}
}

// processMatch is the PROCESS of the process, port, listen and socket types: checkers and their
// exec children never match.
func processMatch(v *Values) checks.ProcessMatch {
	return checks.ProcessMatch{Name: v.String("process"), Cmdline: v.Bool("cmdline"), NotCheckers: true}
}
