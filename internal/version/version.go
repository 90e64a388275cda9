// Package version is askwpd's version, as every surface reports it:
// askwpd --version, /v1/status and the MCP serverInfo.
package version

import (
	"runtime/debug"
	"sync"
)

// Version is what the linker set (-X, as scripts/build-deb.sh does with
// git describe); empty in a build that set none.
var Version = ""

var (
	once     sync.Once
	resolved string
)

// String is the build's version: the linker's when it set one, else what
// the Go toolchain stamped into the binary, the main module's version
// (v1.2.3, or a pseudo-version with +dirty for an uncommitted tree), else
// its VCS revision, else "devel" (a test binary, a build without VCS
// information).
func String() string {
	once.Do(func() {
		resolved = Version
		if resolved == "" {
			info, ok := debug.ReadBuildInfo()
			if ok {
				resolved = fromBuildInfo(info)
			}
		}
		if resolved == "" {
			resolved = "devel"
		}
	})
	return resolved
}

func fromBuildInfo(info *debug.BuildInfo) string {
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev string
	var dirty bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return ""
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	v := "devel-" + rev
	if dirty {
		v += "+dirty"
	}
	return v
}
