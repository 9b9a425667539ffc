package cluster

import (
	"crypto/x509"
	"net"
	"testing"
	"time"
)

func TestPKIIssuesCertificatesTheComponentsAccept(t *testing.T) {
	ip := net.ParseIP(DefaultIP)
	p, err := newPKI(t.TempDir(), ip)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(p.ca.cert)
	frontRoots := x509.NewCertPool()
	frontRoots.AddCert(p.frontProxyCA.cert)
	cases := []struct {
		name  string
		kp    *keyPair
		roots *x509.CertPool
		usage x509.ExtKeyUsage
		host  string
		user  string
		group string
	}{
		{"API server serves 127.0.0.1", p.apiServer, roots, x509.ExtKeyUsageServerAuth, "127.0.0.1", "kube-apiserver", ""},
		{"API server serves the namespace address", p.apiServer, roots, x509.ExtKeyUsageServerAuth, DefaultIP, "kube-apiserver", ""},
		{"API server serves kubernetes.default.svc", p.apiServer, roots, x509.ExtKeyUsageServerAuth, "kubernetes.default.svc", "kube-apiserver", ""},
		{"kubelet serves the node address", p.kubelet, roots, x509.ExtKeyUsageServerAuth, DefaultIP, "e2e-kubelet", ""},
		{"admin is a system master", p.admin, roots, x509.ExtKeyUsageClientAuth, "", adminUser, systemMastersGroup},
		{"plugin user is in the plugin group only", p.plugin, roots, x509.ExtKeyUsageClientAuth, "", PluginUser, pluginGroup},
		{"front proxy client is signed by the front proxy CA", p.frontProxy, frontRoots, x509.ExtKeyUsageClientAuth, "", frontProxyClientCN, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := x509.VerifyOptions{Roots: tc.roots, DNSName: tc.host, KeyUsages: []x509.ExtKeyUsage{tc.usage}, CurrentTime: time.Now()}
			if _, err := tc.kp.cert.Verify(opts); err != nil {
				t.Errorf("verify: %v", err)
			}
			if tc.kp.cert.Subject.CommonName != tc.user {
				t.Errorf("CN %q, want %q", tc.kp.cert.Subject.CommonName, tc.user)
			}
			if tc.group != "" && (len(tc.kp.cert.Subject.Organization) != 1 || tc.kp.cert.Subject.Organization[0] != tc.group) {
				t.Errorf("O %v, want [%s]", tc.kp.cert.Subject.Organization, tc.group)
			}
		})
	}
}
