package cli

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/prometheus/common/version"
)

// keepVersion restores the version variables a test changes.
func keepVersion(t *testing.T) {
	t.Helper()
	v, r, d := version.Version, version.Revision, version.BuildDate
	t.Cleanup(func() { version.Version, version.Revision, version.BuildDate = v, r, d })
}

func TestFromBuildInfo(t *testing.T) {
	stamped := &debug.BuildInfo{
		Main: debug.Module{Path: "sudoku-fcgi", Version: "v0.0.0-20261201194001-d1e22ed31eca+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "d1e22ed31eca6a95e7a0cf68d067fd37df94a7db"},
			{Key: "vcs.time", Value: "2026-12-01T19:40:01Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	t.Run("plain go build", func(t *testing.T) {
		keepVersion(t)
		version.Version, version.Revision, version.BuildDate = "", "", ""
		fromBuildInfo(stamped)
		if version.Version != stamped.Main.Version || version.Revision != "d1e22ed31eca6a95e7a0cf68d067fd37df94a7db-dirty" || version.BuildDate != "2026-12-01T19:40:01Z" {
			t.Errorf("fromBuildInfo: version %q revision %q date %q", version.Version, version.Revision, version.BuildDate)
		}
		if got := version.Print("sudoku"); !strings.Contains(got, "revision: d1e22ed31eca6a95e7a0cf68d067fd37df94a7db-dirty") {
			t.Errorf("version.Print = %q, want the stamped revision", got)
		}
	})
	t.Run("ldflags win", func(t *testing.T) {
		keepVersion(t)
		version.Version, version.Revision, version.BuildDate = "1.2.3", "abc", "20261201"
		fromBuildInfo(stamped)
		if version.Version != "1.2.3" || version.Revision != "abc" || version.BuildDate != "20261201" {
			t.Errorf("fromBuildInfo overrode ldflags: %q %q %q", version.Version, version.Revision, version.BuildDate)
		}
	})
	t.Run("no vcs stamp", func(t *testing.T) {
		keepVersion(t)
		version.Version, version.Revision = "", ""
		fromBuildInfo(&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}})
		if version.Version != "" || version.Revision != "" {
			t.Errorf("fromBuildInfo without a stamp set %q %q", version.Version, version.Revision)
		}
	})
}
