package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"
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
			want := VersionInfo{Version: tc.wantVersion, Commit: tc.wantCommit, GoVersion: runtime.Version(),
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
		v    VersionInfo
		want string
	}{
		{"untagged build's version already holds the commit", VersionInfo{Version: "v0.0.0-6cc5fcd", Commit: "6cc5fcd", GoVersion: "go1.26.0", Platform: "linux/amd64", Upstream: "v1.37.2"},
			"kubectl-hpa v0.0.0-6cc5fcd (go1.26.0, linux/amd64; decisions of Kubernetes v1.37.2)"},
		{"tagged build names its commit", VersionInfo{Version: "v1.2.3", Commit: "6cc5fcd", GoVersion: "go1.26.0", Platform: "linux/amd64", Upstream: "v1.37.2"},
			"kubectl-hpa v1.2.3 (commit 6cc5fcd, go1.26.0, linux/amd64; decisions of Kubernetes v1.37.2)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.v.String(); got != tc.want {
				t.Errorf("String() = %q; want %q", got, tc.want)
			}
		})
	}
}

func TestVersionJSONReportsEveryField(t *testing.T) {
	var out bytes.Buffer
	if code := Execute(context.Background(), genericiooptions.IOStreams{Out: &out, ErrOut: &out}, []string{"version", "-o", "json"}, nil); code != 0 {
		t.Fatalf("version -o json exited %d: %s", code, out.String())
	}
	var got map[string]string
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("version -o json printed %q: %v", out.String(), err)
	}
	v := Version()
	want := map[string]string{"version": v.Version, "commit": v.Commit, "goVersion": runtime.Version(),
		"platform": runtime.GOOS + "/" + runtime.GOARCH, "upstream": "v1.37.2"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("version -o json = %v; want %v", got, want)
	}
}

// TestEveryRequestCarriesTheVersionedUserAgent runs explain, run and completion against a server
// that answers nothing useful (404) and records the User-Agent of every request.
func TestEveryRequestCarriesTheVersionedUserAgent(t *testing.T) {
	var mu sync.Mutex
	agents := map[string][]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		agents[r.UserAgent()] = append(agents[r.UserAgent()], r.Method+" "+r.URL.Path)
		mu.Unlock()
		http.NotFound(w, r)
	}))
	defer srv.Close()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+srv.URL+`"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: demo}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"explain", "web"},
		{"run", "--dry-run=client"},
		{"__complete", "explain", ""},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		var out bytes.Buffer
		Execute(ctx, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}, append(args, "--kubeconfig", kubeconfig), nil)
		cancel()
	}
	mu.Lock()
	defer mu.Unlock()
	if len(agents) == 0 {
		t.Fatal("no request reached the server")
	}
	want := UserAgent()
	for agent, reqs := range agents {
		if agent != want {
			t.Errorf("%d requests with user agent %q (first: %s); want %q", len(reqs), agent, reqs[0], want)
		}
	}
	if !strings.HasPrefix(want, "kubectl-hpa/"+Version().Version+" (") {
		t.Errorf("user agent %q does not start with kubectl-hpa/%s", want, Version().Version)
	}
	if len(agents) != 1 {
		t.Errorf("requests carried %d user agents; want one", len(agents))
	}
}
