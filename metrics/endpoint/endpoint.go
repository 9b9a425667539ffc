// Package endpoint holds the rules for a metrics service the plugin reaches directly rather
// than through the API server (Heapster's --heapster-url, Prometheus' --prometheus-url): what
// its base URL may be, and the plain HTTP transport that trusts the system's CAs or a given
// bundle. Both flags follow the same rules, so their errors read alike.
package endpoint

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
)

// URLRules names the flags an error must cite and what the caller allows.
type URLRules struct {
	// Flag is the URL's flag, e.g. "--heapster-url".
	Flag string
	// InsecureFlag is the flag that allows plain http to a host other than loopback.
	InsecureFlag string
	// InsecureHTTP is that flag's value.
	InsecureHTTP bool
	// CredentialsFlag, when set, refuses user information in the URL and names the flag
	// that carries credentials instead.
	CredentialsFlag string
}

// ParseBaseURL checks raw against the rules: http or https, a host, no query or fragment,
// plain http only to loopback unless InsecureHTTP. Errors show the URL with any password
// redacted.
func (r URLRules) ParseBaseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// A *url.Error quotes the whole URL, a password in it included: keep only the reason.
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("malformed %s: %w", r.Flag, err)
	}
	shown := u.Redacted()
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("malformed %s %q: the scheme must be http or https", r.Flag, shown)
	case u.Hostname() == "":
		return nil, fmt.Errorf("malformed %s %q: no host", r.Flag, shown)
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("malformed %s %q: give a base URL without query or fragment", r.Flag, shown)
	case u.User != nil && r.CredentialsFlag != "":
		return nil, fmt.Errorf("malformed %s %q: put no credentials in the URL, use %s", r.Flag, shown, r.CredentialsFlag)
	case u.Scheme == "http" && !IsLoopback(u.Hostname()) && !r.InsecureHTTP:
		return nil, fmt.Errorf("refusing plain http %s to %s, which is not loopback: use https, kubectl port-forward to 127.0.0.1, or pass %s", r.Flag, u.Hostname(), r.InsecureFlag)
	}
	return u, nil
}

// IsLoopback reports whether host is localhost or a loopback address.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Transport is a clone of the default transport, trusting the CAs of the PEM bundle caFile
// instead of the system's when caFile is set; caFlag names it in errors. It carries no
// cluster credentials: they must not go to a port-forward or another service.
func Transport(caFlag, caFile string) (*http.Transport, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if caFile == "" {
		return tr, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", caFlag, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s %s holds no PEM certificate", caFlag, caFile)
	}
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return tr, nil
}
