package endpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseBaseURL(t *testing.T) {
	heapster := URLRules{Flag: "--heapster-url", InsecureFlag: "--heapster-insecure-http"}
	prom := URLRules{Flag: "--prometheus-url", InsecureFlag: "--prometheus-insecure-http", CredentialsFlag: "--prometheus-token-file"}
	insecure := heapster
	insecure.InsecureHTTP = true
	cases := []struct {
		name    string
		rules   URLRules
		raw     string
		wantErr string // empty: accepted
	}{
		{name: "https to any host is accepted", rules: heapster, raw: "https://heapster.example:8082/base"},
		{name: "plain http to localhost is accepted", rules: heapster, raw: "http://localhost:8082"},
		{name: "plain http to an IPv6 loopback is accepted", rules: prom, raw: "http://[::1]:9090"},
		{name: "plain http to another host is refused naming the flag that allows it", rules: heapster, raw: "http://10.0.0.7:8082",
			wantErr: "refusing plain http --heapster-url to 10.0.0.7, which is not loopback: use https, kubectl port-forward to 127.0.0.1, or pass --heapster-insecure-http"},
		{name: "plain http to another host is accepted when allowed", rules: insecure, raw: "http://10.0.0.7:8082"},
		{name: "another scheme is refused", rules: prom, raw: "ftp://127.0.0.1", wantErr: `malformed --prometheus-url "ftp://127.0.0.1": the scheme must be http or https`},
		{name: "no host is refused", rules: prom, raw: "https:///api", wantErr: `malformed --prometheus-url "https:///api": no host`},
		{name: "a query is refused", rules: heapster, raw: "https://h/?x=1", wantErr: "give a base URL without query or fragment"},
		{name: "a fragment is refused", rules: heapster, raw: "https://h/#top", wantErr: "give a base URL without query or fragment"},
		{name: "credentials are accepted where the rules allow them", rules: heapster, raw: "https://user:secret@h"},
		{name: "credentials are refused where another flag carries them, the password redacted", rules: prom, raw: "https://user:secret@h",
			wantErr: `malformed --prometheus-url "https://user:xxxxx@h": put no credentials in the URL, use --prometheus-token-file`},
		{name: "a parse error keeps the password out of the message", rules: heapster, raw: "https://user:secret@h:port/",
			wantErr: "malformed --heapster-url: invalid port"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u, err := tc.rules.ParseBaseURL(tc.raw)
			if tc.wantErr == "" {
				if err != nil || u == nil {
					t.Fatalf("ParseBaseURL(%q) = %v, %v; want a URL", tc.raw, u, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("ParseBaseURL(%q) accepted it; want %q", tc.raw, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q, want it to contain %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q shows the password", err)
			}
		})
	}
}

func TestTransport(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		caFile  string
		wantErr string
	}{
		{name: "without a bundle the system's CAs are trusted", caFile: ""},
		{name: "a missing bundle names the flag", caFile: filepath.Join(dir, "missing.pem"), wantErr: "reading --x-certificate-authority: open "},
		{name: "a file without a PEM certificate names the flag and the file", caFile: notPEM, wantErr: "--x-certificate-authority " + notPEM + " holds no PEM certificate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := Transport("--x-certificate-authority", tc.caFile)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tr.TLSClientConfig != nil && tr.TLSClientConfig.RootCAs != nil {
				t.Errorf("RootCAs set without a bundle")
			}
		})
	}
}
