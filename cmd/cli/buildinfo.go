package cli

import (
	"runtime/debug"

	"github.com/prometheus/common/version"
)

// Version is what every binary's -version prints: prometheus/common's
// version block and, for a binary that links the solver, the engine it was
// built with ("scalar" or "asm-avx2", see solver.Engine), which the build
// tags do not tell. engine "" leaves that line out: cli does not import the
// solver, so a binary links it only when it solves.
func Version(program, engine string) string {
	if engine == "" {
		return version.Print(program)
	}
	return version.Print(program) + "\n  engine:           " + engine
}

// stampVersion fills what -ldflags -X left empty in
// github.com/prometheus/common/version (make build sets them all) from the
// build information Go stamps into a binary built in a git checkout: the
// module version, vcs.revision ("-dirty" with vcs.modified, as the Makefile
// writes it) and vcs.time. -version and the build_info metric then name the
// commit of a plain `go build` too.
func stampVersion() {
	if bi, ok := debug.ReadBuildInfo(); ok {
		fromBuildInfo(bi)
	}
}

func fromBuildInfo(bi *debug.BuildInfo) {
	setting := map[string]string{}
	for _, s := range bi.Settings {
		setting[s.Key] = s.Value
	}
	if version.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		version.Version = bi.Main.Version
	}
	if rev := setting["vcs.revision"]; version.Revision == "" && rev != "" {
		if setting["vcs.modified"] == "true" {
			rev += "-dirty"
		}
		version.Revision = rev
	}
	if version.BuildDate == "" {
		version.BuildDate = setting["vcs.time"]
	}
}
