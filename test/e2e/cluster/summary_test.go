package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubectl-hpa/kubectl-hpa/internal/golden"
)

func TestSummaryPageMatchesGolden(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	pods := []PodSample{
		{Namespace: "ns", Name: "web-1", Containers: []string{"app", "sidecar"}, StartTime: now.Add(-100 * time.Second), CPUSeconds: 12.5, CPUMilli: 250, MemoryBytes: 64 << 20},
		{Namespace: "ns", Name: "web-2", Containers: []string{"app"}, StartTime: now.Add(-10 * time.Second), CPUSeconds: 0.25, CPUMilli: 25, MemoryBytes: 32 << 20},
	}
	got, err := renderSummary("node-1", now.Add(-time.Hour), pods, 101.5, 600<<20, now)
	if err != nil {
		t.Fatal(err)
	}
	var indented map[string]any
	if err := json.Unmarshal(got, &indented); err != nil {
		t.Fatal(err)
	}
	pretty, err := json.MarshalIndent(indented, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	pretty = append(pretty, '\n')
	golden.Check(t, filepath.Join("testdata", "stats-summary.golden.json"), pretty)
}

// Heapster computes a rate as the difference of two pages' usageCoreNanoSeconds over the
// difference of their whole-second times: pages read at whole seconds give the load exactly.
func TestSummaryCountersOfTwoPagesGiveTheLoadAsHeapsterComputesIt(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	m := NewLoadModel(clk)
	web := map[string]string{"app": "web"}
	m.PodRunning(pod("a"), "node-1", []string{"c"}, web, t0, true)
	m.Set(Workload{Namespace: "ns", Selector: web}, Load{CPUMilli: 90, MemoryBytes: 64 << 20})
	page := func(at time.Time) summary {
		clk.SetTime(at)
		pods, cpu, mem := m.SampleNodeAt("node-1", at)
		raw, err := renderSummary("node-1", t0, pods, cpu, mem, at)
		if err != nil {
			t.Fatal(err)
		}
		var s summary
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	first, second := page(t0.Add(7*time.Second)), page(t0.Add(12*time.Second))
	c1, c2 := first.Pods[0].Containers[0].CPU, second.Pods[0].Containers[0].CPU
	// Heapster's rate calculator: 1000 * delta nanoseconds / delta scrape time in nanoseconds.
	rate := 1000 * int64(*c2.UsageCoreNanoSeconds-*c1.UsageCoreNanoSeconds) / (c2.Time.UnixNano() - c1.Time.UnixNano())
	if rate != 90 {
		t.Errorf("rate from two pages %dm, want 90m", rate)
	}
	if got := *c2.UsageNanoCores; got != 90e6 {
		t.Errorf("usageNanoCores %d, want 90000000", got)
	}
	if got := *second.Pods[0].Containers[0].Memory.WorkingSetBytes; got != 64<<20 {
		t.Errorf("workingSetBytes %d, want %d", got, 64<<20)
	}
}

func TestKubeletAuthAllowsOnlyVerifiedClientsTheAPIServerAuthorizes(t *testing.T) {
	verified := func(cn string, orgs ...string) *tls.ConnectionState {
		cert := &x509.Certificate{Subject: pkix.Name{CommonName: cn, Organization: orgs}}
		return &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{cert}}}
	}
	const goodToken, badToken = "sa-token", "forged"
	cases := []struct {
		name      string
		tls       *tls.ConnectionState
		token     string // sent as a bearer token; the API server authenticates only goodToken
		allow     bool
		wantCode  int
		wantBody  string
		wantSAR   *authorizationv1.ResourceAttributes
		wantUser  string
		wantGroup []string
	}{
		{name: "plain http is unauthorized", tls: nil, wantCode: http.StatusUnauthorized},
		{name: "TLS without a verified client certificate is unauthorized", tls: &tls.ConnectionState{}, wantCode: http.StatusUnauthorized},
		{name: "a verified user allowed nodes/stats gets the page", tls: verified("e2e:heapster", "g1"), allow: true, wantCode: http.StatusOK,
			wantSAR:  &authorizationv1.ResourceAttributes{Verb: "get", Resource: "nodes", Subresource: "stats", Name: "node-1"},
			wantUser: "e2e:heapster", wantGroup: []string{"g1"}},
		{name: "without a certificate, a bearer token the API server authenticates is reviewed as its user", tls: &tls.ConnectionState{}, token: goodToken,
			allow: true, wantCode: http.StatusOK,
			wantSAR:  &authorizationv1.ResourceAttributes{Verb: "get", Resource: "nodes", Subresource: "stats", Name: "node-1"},
			wantUser: "system:serviceaccount:monitoring:prometheus", wantGroup: []string{"system:serviceaccounts"}},
		{name: "a bearer token the API server does not authenticate is unauthorized", tls: &tls.ConnectionState{}, token: badToken, wantCode: http.StatusUnauthorized},
		{name: "a bearer token over plain http is unauthorized", tls: nil, token: goodToken, wantCode: http.StatusUnauthorized},
		{name: "a verified user the API server denies is forbidden with the kubelet's message", tls: verified("e2e:nobody"), wantCode: http.StatusForbidden,
			wantBody: "Forbidden (user=e2e:nobody, verb=get, resource=nodes, subresource=stats): no RBAC rule\n",
			wantSAR:  &authorizationv1.ResourceAttributes{Verb: "get", Resource: "nodes", Subresource: "stats", Name: "node-1"},
			wantUser: "e2e:nobody"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			var reviews []authorizationv1.SubjectAccessReviewSpec
			client.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
				sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
				reviews = append(reviews, sar.Spec)
				sar.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: tc.allow}
				if !tc.allow {
					sar.Status.Reason = "no RBAC rule"
				}
				return true, sar, nil
			})
			var tokenReviews int
			client.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
				tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
				tokenReviews++
				if tr.Spec.Token == goodToken {
					tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{
						Username: "system:serviceaccount:monitoring:prometheus", Groups: []string{"system:serviceaccounts"}}}
				}
				return true, tr, nil
			})
			auth := &kubeletAuth{client: client, clock: clocktesting.NewFakeClock(t0)}
			h := auth.wrap("node-1", "stats", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("page")) }))
			for range 2 {
				req := httptest.NewRequest(http.MethodGet, "/stats/summary/", nil)
				req.TLS = tc.tls
				if tc.token != "" {
					req.Header.Set("Authorization", "Bearer "+tc.token)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != tc.wantCode {
					t.Fatalf("status %d, want %d (body %q)", rec.Code, tc.wantCode, rec.Body.String())
				}
				if tc.wantBody != "" && rec.Body.String() != tc.wantBody {
					t.Errorf("body %q, want %q", rec.Body.String(), tc.wantBody)
				}
			}
			// The second request's token is answered from the cache too.
			if tc.token != "" && tc.tls != nil && tokenReviews != 1 {
				t.Errorf("%d TokenReviews for two requests with one token, want 1", tokenReviews)
			}
			if tc.wantSAR == nil {
				if len(reviews) != 0 {
					t.Errorf("%d SubjectAccessReviews for an unauthenticated request, want none", len(reviews))
				}
				return
			}
			// The second request is answered from the cache.
			if len(reviews) != 1 {
				t.Fatalf("%d SubjectAccessReviews for two requests, want 1", len(reviews))
			}
			if diff := cmp.Diff(*tc.wantSAR, *reviews[0].ResourceAttributes); diff != "" {
				t.Errorf("review attributes (-want +got):\n%s", diff)
			}
			if reviews[0].User != tc.wantUser || !cmp.Equal(reviews[0].Groups, tc.wantGroup) {
				t.Errorf("review of %s %v, want %s %v", reviews[0].User, reviews[0].Groups, tc.wantUser, tc.wantGroup)
			}
		})
	}
}
