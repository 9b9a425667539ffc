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
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/version"
)

func TestVersionJSONAndYAMLReportEveryField(t *testing.T) {
	for _, format := range []string{"json", "yaml"} {
		t.Run(format, func(t *testing.T) {
			var out bytes.Buffer
			if code := Execute(context.Background(), genericiooptions.IOStreams{Out: &out, ErrOut: &out}, []string{"version", "-o", format}, nil); code != 0 {
				t.Fatalf("version -o %s exited %d: %s", format, code, out.String())
			}
			var got map[string]string
			if err := yaml.Unmarshal(out.Bytes(), &got); err != nil {
				t.Fatalf("version -o %s printed %q: %v", format, out.String(), err)
			}
			if format == "json" && !json.Valid(out.Bytes()) {
				t.Errorf("version -o json printed %q, not JSON", out.String())
			}
			v := version.Get()
			want := map[string]string{"version": v.Version, "commit": v.Commit, "goVersion": runtime.Version(),
				"platform": runtime.GOOS + "/" + runtime.GOARCH, "upstream": "v1.37.2"}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("version -o %s = %v; want %v", format, got, want)
			}
		})
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
	want := version.UserAgent()
	for agent, reqs := range agents {
		if agent != want {
			t.Errorf("%d requests with user agent %q (first: %s); want %q", len(reqs), agent, reqs[0], want)
		}
	}
	if !strings.HasPrefix(want, "kubectl-hpa/"+version.Get().Version+" (") {
		t.Errorf("user agent %q does not start with kubectl-hpa/%s", want, version.Get().Version)
	}
	if len(agents) != 1 {
		t.Errorf("requests carried %d user agents; want one", len(agents))
	}
}
