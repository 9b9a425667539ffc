package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Set at link time by the Makefile (-X); empty in a plain go build or go install, which stamp
// the module version and VCS revision into the build info instead.
var (
	version string
	commit  string
)

// upstream is the Kubernetes release whose HPA controller decisions this build reproduces.
const upstream = "v1.37.2"

// Info is what "kubectl hpa version" reports.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
	// Upstream names the Kubernetes release whose HPA controller decisions this build reproduces.
	Upstream string `json:"upstream"`
}

// Get returns the build's version information.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return versionInfo(version, commit, bi)
}

// versionInfo prefers the linker's values and falls back to what the go command stamped:
// the module version of a go install (a pseudo-version in a checkout) and the VCS revision.
func versionInfo(linkedVersion, linkedCommit string, bi *debug.BuildInfo) Info {
	v := Info{Version: linkedVersion, Commit: linkedCommit, GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH, Upstream: upstream}
	if bi != nil {
		if v.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && v.Commit == "" {
				v.Commit = s.Value[:min(len(s.Value), 7)]
			}
		}
	}
	if v.Version == "" {
		v.Version = "v0.0.0-dev"
	}
	if v.Commit == "" {
		v.Commit = "unknown"
	}
	return v
}

// UserAgent is the one user agent of every request the plugin sends, in client-go's form
// (binary/version (os/arch) source/commit).
func UserAgent() string {
	v := Get()
	return fmt.Sprintf("kubectl-hpa/%s (%s) kubectl-hpa/%s", v.Version, v.Platform, v.Commit)
}

// String is the one-line form: the commit is left out when the version already names it
// (v0.0.0-<commit> of an untagged build).
func (v Info) String() string {
	build := "commit " + v.Commit + ", "
	if strings.Contains(v.Version, v.Commit) {
		build = ""
	}
	return fmt.Sprintf("kubectl-hpa %s (%s%s, %s; decisions of Kubernetes %s)", v.Version, build, v.GoVersion, v.Platform, v.Upstream)
}
