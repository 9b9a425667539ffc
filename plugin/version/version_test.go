package version

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestVersionInfoPrefersLinkedValuesThenBuildInfo(t *testing.T) {
	vcs := func(rev string) []debug.BuildSetting { return []debug.BuildSetting{{Key: "vcs.revision", Value: rev}} }
	for _, tc := range []struct {
		name                        string
		linkedVersion, linkedCommit string
		bi                          *debug.BuildInfo
		wantVersion, wantCommit     string
	}{
		{"make build links version and commit", "v1.2.3", "abc1234", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("ffffffffffff")}, "v1.2.3", "abc1234"},
		{"go install of a tag reports the module version", "", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, "v1.4.0", "unknown"},
		{"go build in a checkout reports the pseudo-version and the revision", "", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261201130000-6cc5fcd12345"}, Settings: vcs("6cc5fcd123456789")}, "v0.0.0-20261201130000-6cc5fcd12345", "6cc5fcd"},
		{"nothing stamped", "", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "v0.0.0-dev", "unknown"},
		{"no build info", "", "", nil, "v0.0.0-dev", "unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := versionInfo(tc.linkedVersion, tc.linkedCommit, tc.bi)
			want := Info{Version: tc.wantVersion, Commit: tc.wantCommit, GoVersion: runtime.Version(),
				Platform: runtime.GOOS + "/" + runtime.GOARCH, Upstream: "v1.37.2"}
			if got != want {
				t.Errorf("versionInfo = %+v; want %+v", got, want)
			}
		})
	}
}

func TestVersionLineNamesTheCommitOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    Info
		want string
	}{
		{"untagged build's version already holds the commit", Info{Version: "v0.0.0-6cc5fcd", Commit: "6cc5fcd", GoVersion: "go1.26.0", Platform: "linux/amd64", Upstream: "v1.37.2"},
			"kubectl-hpa v0.0.0-6cc5fcd (go1.26.0, linux/amd64; decisions of Kubernetes v1.37.2)"},
		{"tagged build names its commit", Info{Version: "v1.2.3", Commit: "6cc5fcd", GoVersion: "go1.26.0", Platform: "linux/amd64", Upstream: "v1.37.2"},
			"kubectl-hpa v1.2.3 (commit 6cc5fcd, go1.26.0, linux/amd64; decisions of Kubernetes v1.37.2)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.v.String(); got != tc.want {
				t.Errorf("String() = %q; want %q", got, tc.want)
			}
		})
	}
}
