package plugin

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/url"
	"strings"
	"testing"
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
			ee := apiExitError("getting it", tc.err)
			if ee.Code != tc.wantCode || !strings.Contains(ee.Error(), tc.want) {
				t.Errorf("got code %d %q, want code %d containing %q", ee.Code, ee.Error(), tc.wantCode, tc.want)
			}
		})
	}
}
