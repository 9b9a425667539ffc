// Package prometheus reads the past of an HPA's metrics from a Prometheus server: per pod
// series on a time grid of cAdvisor's container_cpu_usage_seconds_total (as a rate) and
// container_memory_working_set_bytes, and the series a user names for Pods, Object and
// External metrics. explain replays them through the decision core to reconstruct the
// recommendations kube-controller-manager keeps in memory; simulate can take its load
// from them.
//
// It speaks to Prometheus through Prometheus' own client (client_golang's api/prometheus/v1),
// which already knows the HTTP API's encodings (form-encoded POST with a GET fallback, the
// response envelope, warnings, typed errors, the matrix and vector JSON), so this package
// only builds queries and turns answers into samples.
package prometheus

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/template"
	"time"

	"github.com/kubectl-hpa/kubectl-hpa/metrics/endpoint"
)

// DefaultTimeout bounds each Prometheus request (as --metrics-timeout does metrics reads).
const DefaultTimeout = 10 * time.Second

// Config says where Prometheus is and how to read it. The commands bind it to their
// --prometheus-* flags, which its errors name. The zero value reads nothing (URL empty).
type Config struct {
	// URL is Prometheus' base URL (its HTTP API is under /api/v1).
	URL string
	// TokenFile holds a bearer token sent with every request; read at each request, so a
	// rotated token (a projected service account token) is picked up.
	TokenFile string
	// CAFile is a PEM bundle of the CAs trusted for an https URL instead of the system's.
	CAFile string
	// InsecureHTTP allows a plain http URL on a host other than loopback.
	InsecureHTTP bool
	// Timeout bounds each request; 0 means DefaultTimeout.
	Timeout time.Duration
	// Selector holds extra label matchers added to every cAdvisor series selector, for a
	// Prometheus that holds several clusters or jobs: `cluster="prod",job="kubelet"`.
	Selector string
	// RateWindow is the window CPU usage is averaged over (the counter's increase over it, or
	// rate() over it); 0 takes the live samples' window (see Reader.Window).
	RateWindow time.Duration
	// Queries are PromQL templates by metric name for Pods, Object and External metrics,
	// whose series cAdvisor does not have (see Vars for what a template can use).
	Queries map[string]string
}

// Enabled reports whether a Prometheus URL was given.
func (c Config) Enabled() bool { return c.URL != "" }

// Validate checks the configuration without talking to Prometheus, with the rules of
// --heapster-url: http or https, a host, no query or fragment, plain http only to
// loopback unless InsecureHTTP.
func (c Config) Validate() error {
	if c.URL == "" {
		for flag, set := range map[string]bool{
			"--prometheus-token-file":            c.TokenFile != "",
			"--prometheus-certificate-authority": c.CAFile != "",
			"--prometheus-insecure-http":         c.InsecureHTTP,
			"--prometheus-selector":              c.Selector != "",
			"--prometheus-rate-window":           c.RateWindow != 0,
			"--prometheus-query":                 len(c.Queries) > 0,
		} {
			if set {
				return fmt.Errorf("%s is only used with --prometheus-url", flag)
			}
		}
		return nil
	}
	u, err := c.url()
	if err != nil {
		return err
	}
	if c.CAFile != "" && u.Scheme != "https" {
		return fmt.Errorf("--prometheus-certificate-authority is only used with an https --prometheus-url, got %s", u.Redacted())
	}
	if c.Timeout < 0 {
		return fmt.Errorf("--prometheus-timeout must not be negative, got %s", c.Timeout)
	}
	if c.RateWindow < 0 {
		return fmt.Errorf("--prometheus-rate-window must not be negative, got %s", c.RateWindow)
	}
	if c.RateWindow != 0 && c.RateWindow < time.Second {
		return fmt.Errorf("--prometheus-rate-window %s is below Prometheus' resolution: give whole seconds", c.RateWindow)
	}
	if strings.ContainsAny(c.Selector, "{}") {
		return fmt.Errorf("--prometheus-selector %q: give label matchers without braces, e.g. cluster=\"prod\"", c.Selector)
	}
	for name, q := range c.Queries {
		if _, err := template.New(name).Option("missingkey=error").Parse(q); err != nil {
			return fmt.Errorf("--prometheus-query %s: %w", name, err)
		}
	}
	return nil
}

func (c Config) url() (*url.URL, error) {
	return endpoint.URLRules{
		Flag: "--prometheus-url", InsecureFlag: "--prometheus-insecure-http", InsecureHTTP: c.InsecureHTTP,
		CredentialsFlag: "--prometheus-token-file",
	}.ParseBaseURL(c.URL)
}

// httpClient is a plain client (the cluster's credentials never go to Prometheus) trusting
// the system's CAs or CAFile's, adding the bearer token of TokenFile.
func (c Config) httpClient() (*http.Client, error) {
	tr, err := endpoint.Transport("--prometheus-certificate-authority", c.CAFile)
	if err != nil {
		return nil, err
	}
	var rt http.RoundTripper = tr
	if c.TokenFile != "" {
		// Read once now so that a missing file is a configuration error, not a failed query.
		if _, err := readToken(c.TokenFile); err != nil {
			return nil, err
		}
		rt = &bearer{file: c.TokenFile, next: tr}
	}
	timeout := c.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	return &http.Client{Transport: rt, Timeout: timeout}, nil
}

// bearer adds the token of file to each request. It never logs or returns the token.
type bearer struct {
	file string
	next http.RoundTripper
}

func (b *bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	token, err := readToken(b.file)
	if err != nil {
		return nil, err
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+token)
	return b.next.RoundTrip(req)
}

func readToken(file string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("reading --prometheus-token-file: %w", err)
	}
	token := strings.TrimSpace(string(data))
	if token == "" {
		return "", errors.New("--prometheus-token-file is empty")
	}
	return token, nil
}
