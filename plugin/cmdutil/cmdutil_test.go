package cmdutil

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"

	"github.com/kubectl-hpa/kubectl-hpa/metrics"
)

func TestAPIExitErrorSaysWhyTheServerWasNotReached(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantCode int
		want     string
	}{
		{"untrusted certificate", &url.Error{Op: "Get", URL: "https://10.0.0.1:6443/api", Err: &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}},
			ExitFailure, "the API server's certificate is not trusted by the kubeconfig's certificate-authority"},
		{"connection refused", &url.Error{Op: "Get", URL: "https://10.0.0.1:6443/api", Err: errors.New("connect: connection refused")},
			ExitFailure, "is the API server reachable?"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ee := APIExitError("getting it", tc.err)
			if ee.Code != tc.wantCode || !strings.Contains(ee.Error(), tc.want) {
				t.Errorf("got code %d %q, want code %d containing %q", ee.Code, ee.Error(), tc.wantCode, tc.want)
			}
		})
	}
}

func TestAddMetricsFlags(t *testing.T) {
	cfg := metrics.DefaultConfig()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	AddMetricsFlags(fs, &cfg)
	if err := fs.Parse([]string{"--metrics-source=heapster", "--heapster-namespace=monitoring", "--heapster-service=hs", "--heapster-scheme=https",
		"--heapster-port=api", "--heapster-url=https://h.example", "--heapster-insecure-http", "--metrics-max-age=1m",
		"--heapster-certificate-authority=/etc/heapster/ca.pem", "--metrics-timeout=3s"}); err != nil {
		t.Fatal(err)
	}
	want := metrics.Config{Source: metrics.SourceHeapster, HeapsterNamespace: "monitoring", HeapsterService: "hs", HeapsterScheme: "https", HeapsterPort: "api",
		HeapsterURL: "https://h.example", HeapsterInsecureHTTP: true, MaxAge: time.Minute, HeapsterCAFile: "/etc/heapster/ca.pem", Timeout: 3 * time.Second}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestSomeNamesCountsThoseItLeavesOut(t *testing.T) {
	for _, tt := range []struct {
		names []string
		want  string
	}{
		{nil, ""},
		{[]string{"a/x", "b/y"}, "a/x, b/y"},
		{[]string{"a/x", "b/y", "c/z"}, "a/x, b/y, c/z"},
		{[]string{"a/x", "b/y", "c/z", "d/w", "e/v"}, "a/x, b/y, c/z and 2 more"},
	} {
		if got := SomeNames(tt.names, 3); got != tt.want {
			t.Errorf("SomeNames(%v, 3) = %q, want %q", tt.names, got, tt.want)
		}
	}
}
