package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	for _, c := range []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{"tagged", debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, "v1.4.0"},
		{"pseudo", debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260101120000-abcdef123456+dirty"}},
			"v0.0.0-20260101120000-abcdef123456+dirty"},
		{"revision", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}, "devel-0123456789ab+dirty"},
		{"nothing", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, ""},
	} {
		if got := fromBuildInfo(&c.info); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if String() == "" {
		t.Error("String() is empty")
	}
}
