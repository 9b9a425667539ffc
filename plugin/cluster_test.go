package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

// apiReply is one canned answer of a stand-in server.
type apiReply struct {
	code int
	body string
}

func statusReply(code int, reason metav1.StatusReason, msg string) apiReply {
	b, _ := json.Marshal(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: int32(code), Reason: reason, Message: msg})
	return apiReply{code, string(b)}
}

var (
	versionOK      = apiReply{200, `{"major":"1","minor":"37","gitVersion":"v1.37.2"}`}
	coreOnly       = apiReply{200, `{"kind":"APIVersions","versions":["v1"]}`}
	noGroups       = apiReply{200, `{"kind":"APIGroupList","apiVersion":"v1","groups":[]}`}
	unauthorized   = statusReply(401, metav1.StatusReasonUnauthorized, "Unauthorized")
	apiNotFound    = statusReply(404, metav1.StatusReasonNotFound, "the server could not find the requested resource")
	plainNotFound  = apiReply{404, "404 page not found\n"}
	serviceDenied  = statusReply(403, metav1.StatusReasonForbidden, `services "heapster" is forbidden: User "dev" cannot get resource "services" in API group "" in the namespace "kube-system"`)
	welcomePage    = apiReply{200, "<html><body>It works!</body></html>"}
	namespaceGone  = statusReply(404, metav1.StatusReasonNotFound, `namespaces "nowhere" not found`)
	emptyHPAList   = apiReply{200, `{"kind":"HorizontalPodAutoscalerList","apiVersion":"autoscaling/v2","metadata":{},"items":[]}`}
	reviewsAllowed = apiReply{201, `{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","status":{"allowed":true}}`}
)

// standInServer answers each request with route(path), on 127.0.0.1.
func standInServer(t *testing.T, route func(r *http.Request) apiReply) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rep := route(r)
		if strings.HasPrefix(rep.body, "{") {
			w.Header().Set("Content-Type", "application/json")
		} else {
			w.Header().Set("Content-Type", "text/html")
		}
		w.WriteHeader(rep.code)
		_, _ = w.Write([]byte(rep.body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// closedPort is an address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return "http://" + addr
}

// runCommand runs the real command tree with a deadline (a run that does not fail would
// otherwise never return) and an empty kubeconfig, so only --server and --token count.
func runCommand(t *testing.T, args ...string) result {
	t.Helper()
	empty := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	code := Execute(ctx, streams, append(args, "--kubeconfig", empty, "--cache-dir", t.TempDir(), "--request-timeout", "5s"), nil)
	if ctx.Err() != nil {
		t.Fatalf("%v did not fail by itself within 30s; stderr:\n%s", args, errOut.String())
	}
	return result{stdout: out.String(), stderr: errOut.String(), code: code}
}

func TestCommandsReportClusterAccessFailuresAsWhatTheyAre(t *testing.T) {
	bySuffix := func(routes map[string]apiReply, otherwise apiReply) func(*http.Request) apiReply {
		return func(r *http.Request) apiReply {
			if rep, ok := routes[r.URL.Path]; ok {
				return rep
			}
			return otherwise
		}
	}
	tests := []struct {
		name string
		// server is the --server URL.
		server  func(t *testing.T) string
		args    []string
		code    int
		want    string
		notWant string
	}{
		{"run with an invalid token exits 9 with the kubeconfig hint, not as a metrics-source choice",
			func(t *testing.T) string { return standInServer(t, bySuffix(nil, unauthorized)) },
			[]string{"run", "-n", "shop", "--dry-run=client"}, cmdutil.ExitUnauthorized, "check your kubeconfig credentials, --context and --user", "--metrics-source"},
		{"a 401 met while discovering the metrics APIs exits 9 too",
			func(t *testing.T) string {
				return standInServer(t, bySuffix(map[string]apiReply{"/version": versionOK}, unauthorized))
			},
			[]string{"run", "-n", "shop", "--dry-run=client"}, cmdutil.ExitUnauthorized, "choosing a metrics source", "pass --metrics-source"},
		{"a 403 met while choosing the metrics source exits 7",
			func(t *testing.T) string {
				return standInServer(t, bySuffix(map[string]apiReply{"/version": versionOK, "/api": coreOnly, "/apis": noGroups,
					"/api/v1/namespaces/kube-system/services/heapster": serviceDenied}, apiNotFound))
			},
			[]string{"run", "-n", "shop", "--dry-run=client"}, cmdutil.ExitForbidden, `lacks the permission to get services (core) in namespace "kube-system"`, ""},
		{"run against a closed port exits 1 asking whether the server is reachable",
			closedPort, []string{"run", "-n", "shop", "--dry-run=client"}, cmdutil.ExitFailure, "is the API server reachable? check the kubeconfig, --context or --server", "--metrics-source"},
		{"run against a plain web server says it is not a Kubernetes API server",
			func(t *testing.T) string { return standInServer(t, bySuffix(nil, plainNotFound)) },
			[]string{"run", "-n", "shop", "--dry-run=client"}, cmdutil.ExitFailure, "is not a Kubernetes API server", "metrics"},
		{"explain against a plain web server says it is not a Kubernetes API server, not that the namespace is missing",
			func(t *testing.T) string { return standInServer(t, bySuffix(nil, plainNotFound)) },
			[]string{"explain", "web", "-n", "demo"}, cmdutil.ExitFailure, "is not a Kubernetes API server (GET /version", `namespace "demo" does not exist`},
		{"explain against a web server answering 200 with a page says it is not a Kubernetes API server",
			func(t *testing.T) string {
				return standInServer(t, bySuffix(map[string]apiReply{"/version": welcomePage}, plainNotFound))
			},
			[]string{"explain", "web", "-n", "demo"}, cmdutil.ExitFailure, "is not a Kubernetes API server", `namespace "demo" does not exist`},
		{"explain with an invalid token exits 9",
			func(t *testing.T) string { return standInServer(t, bySuffix(nil, unauthorized)) },
			[]string{"explain", "web", "-n", "demo"}, cmdutil.ExitUnauthorized, "check your kubeconfig credentials", ""},
		{"run in a namespace given with -n that does not exist exits 4 and does not ask for -n",
			func(t *testing.T) string {
				return standInServer(t, func(r *http.Request) apiReply {
					switch {
					case r.URL.Path == "/version":
						return versionOK
					case r.URL.Path == "/api":
						return coreOnly
					case r.URL.Path == "/apis":
						return noGroups
					case r.URL.Path == "/api/v1/namespaces/nowhere":
						return namespaceGone
					case r.URL.Path == "/apis/autoscaling/v2/namespaces/nowhere/horizontalpodautoscalers":
						return emptyHPAList
					case strings.HasSuffix(r.URL.Path, "/selfsubjectaccessreviews"):
						return reviewsAllowed
					}
					return apiNotFound
				})
			},
			[]string{"run", "-n", "nowhere", "--metrics-source=heapster", "--heapster-url=http://127.0.0.1:1"}, cmdutil.ExitWrongNamespace,
			`namespace "nowhere" does not exist: check the name given to -n (kubectl get namespaces lists them)`, "pass the HPA's namespace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCommand(t, append(tt.args, "--server", tt.server(t), "--token", "not-a-valid-token")...)
			if r.code != tt.code {
				t.Errorf("exit code %d, want %d; stderr: %s", r.code, tt.code, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.want) {
				t.Errorf("stderr %q does not contain %q", r.stderr, tt.want)
			}
			if tt.notWant != "" && strings.Contains(r.stderr, tt.notWant) {
				t.Errorf("stderr %q contains %q", r.stderr, tt.notWant)
			}
			if strings.Contains(r.stderr+r.stdout, "not-a-valid-token") {
				t.Errorf("the token was printed")
			}
		})
	}
}

func TestCommandsWithoutAnyKubeconfigSayWhereTheyLooked(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no-such-kubeconfig")
	t.Setenv("KUBECONFIG", missing)
	t.Setenv("HOME", dir)
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	for _, args := range [][]string{{"explain", "web", "-n", "demo"}, {"run", "-n", "demo", "--dry-run=client"}} {
		t.Run(args[0], func(t *testing.T) {
			r := runRoot(t, args...)
			want := `no kubeconfig found (looked in ` + missing + `; KUBECONFIG="` + missing + `") and not running in a pod: set KUBECONFIG or pass --kubeconfig FILE`
			if r.code != cmdutil.ExitUsage || !strings.Contains(r.stderr, want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, cmdutil.ExitUsage, want)
			}
			if strings.Contains(r.stderr, "localhost:8080") {
				t.Errorf("stderr still names the localhost:8080 fallback: %q", r.stderr)
			}
		})
	}
}
