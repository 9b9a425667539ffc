//go:build e2e

package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

// secLevels are the -v levels the credential checks run at: 6 logs every request's URL,
// 8 its headers and bodies, 9 and 10 full bodies and curl equivalents.
var secLevels = []int{0, 6, 8, 9, 10}

// secSecrets are the strings of one credential that must never be printed.
type secSecrets struct {
	what    string
	secrets []string
}

// secFind returns the first of s's secrets found in out.
func (s secSecrets) find(out string) (string, bool) {
	for _, x := range s.secrets {
		if strings.Contains(out, x) {
			return x, true
		}
	}
	return "", false
}

// secKeySecrets are a client key's PEM body lines and its base64 form in a kubeconfig.
func secKeySecrets(t *testing.T, kubeconfig string) secSecrets {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var key []byte
	for _, a := range cfg.AuthInfos {
		key = a.ClientKeyData
	}
	if len(key) == 0 {
		t.Fatalf("%s has no client key", kubeconfig)
	}
	s := secSecrets{what: "client key"}
	for _, l := range strings.Split(string(key), "\n") {
		if l != "" && !strings.HasPrefix(l, "-----") {
			s.secrets = append(s.secrets, l)
		}
	}
	s.secrets = append(s.secrets, base64.StdEncoding.EncodeToString(key)[:40])
	return s
}

func TestSecCredentialsNeverAppearInOutputAtAnyVerbosity(t *testing.T) {
	t.Parallel()
	rbacApplyRoles(t)
	ctx := context.Background()
	ns := namespace(t, "sec")
	loadedWorkload(t, ns, 2, 180)
	createHPA(t, ns, hpaSpec{})

	// A ServiceAccount token, as a pod would use it.
	cs := shared.Client()
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sec"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "sec", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	token := tr.Status.Token
	tokenKubeconfig, err := shared.RbacTokenKubeconfig("sec-"+ns, ns, token)
	if err != nil {
		t.Fatal(err)
	}
	// A client certificate.
	certUser := "e2e:sec-cert-" + ns
	certK := rbacUser(t, certUser)
	for _, s := range []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "sec", Namespace: ns}, rbacUserSubject(certUser)} {
		rbacBind(t, ns, rbacExplainRole, s)
		rbacBind(t, ns, rbacRunRole, s)
	}
	tokenK := plugin()
	tokenK.Kubeconfig = tokenKubeconfig
	// The signature is the secret part of a JWT; the whole token must not show either.
	parts := strings.Split(token, ".")
	tokenSecrets := secSecrets{what: "service account token", secrets: []string{token, parts[len(parts)-1]}}

	cases := []struct {
		name    string
		k       cluster.Kubectl
		secrets secSecrets
		levels  []int
	}{
		{"bearer token", tokenK, tokenSecrets, secLevels},
		{"client certificate", certK, secKeySecrets(t, certK.Kubeconfig), []int{0, 10}},
	}
	// Until metrics-server has the pods' metrics the HPA cannot compute and explain exits 10.
	waitMetricsAfterReadiness(t, ns)
	for _, tc := range cases {
		for _, v := range tc.levels {
			t.Run(fmt.Sprintf("%s explain -v=%d", tc.name, v), func(t *testing.T) {
				res := rbacExec(t, tc.k, time.Minute, "hpa", "explain", "web", "-n", ns, fmt.Sprintf("-v=%d", v))
				if res.code != 0 {
					t.Errorf("explain exited %d:\n%s", res.code, res.stderr)
				}
				// The checks only mean something if the requests were logged at all.
				if v >= 6 && !strings.Contains(res.stderr, "https://127.0.0.1") {
					t.Errorf("at -v=%d no request URL is logged:\n%s", v, res.stderr)
				}
				if v >= 8 && tc.name == "bearer token" && !strings.Contains(res.stderr, "Bearer <masked>") {
					t.Errorf("at -v=%d the request headers are logged, yet no masked Authorization header shows:\n%s", v, res.stderr)
				}
				if x, found := tc.secrets.find(res.stdout + res.stderr); found {
					t.Errorf("the %s (%q) appears in explain's output at -v=%d", tc.secrets.what, x, v)
				}
			})
			t.Run(fmt.Sprintf("%s run -v=%d", tc.name, v), func(t *testing.T) {
				r := startRun(t, tc.k, "-n", ns, "--sync-period=2s", "-o", "json", fmt.Sprintf("-v=%d", v))
				eventually(t, time.Minute, "run reports a decision it applied", func(context.Context) error {
					if out := r.out.String(); !strings.Contains(out, `"desiredReplicas":4`) || !strings.Contains(out, "acquired Lease") {
						return fmt.Errorf("no applied decision yet")
					}
					return nil
				})
				out := r.stop()
				if x, found := tc.secrets.find(out); found {
					t.Errorf("the %s (%q) appears in run's output at -v=%d", tc.secrets.what, x, v)
				}
			})
		}
	}
}

// secForeignCA returns a CA certificate (PEM) that signed nothing the cluster uses.
func secForeignCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "not-the-cluster-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestSecWrongCAFailsClosedBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "sec-ca")
	createDeployment(t, ns, deploymentSpec{replicas: 1})
	createHPA(t, ns, hpaSpec{})
	user := "e2e:sec-wrong-ca-" + ns
	right := rbacUser(t, user)
	cfg, err := clientcmd.LoadFromFile(right.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.CertificateAuthorityData = secForeignCA(t)
	}
	wrong := right
	wrong.Kubeconfig = filepath.Join(t.TempDir(), "wrong-ca.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, wrong.Kubeconfig); err != nil {
		t.Fatal(err)
	}

	mark, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"hpa", "explain", "web", "-n", ns},
		{"hpa", "run", "-n", ns, "--sync-period=2s"},
		{"hpa", "run", "-n", ns, "--dry-run=client", "--metrics-source=heapster"},
	} {
		t.Run(strings.Join(args[:2], " ")+" "+strings.Join(args[3:], " "), func(t *testing.T) {
			res := rbacExec(t, wrong, time.Minute, args...)
			if res.code == 0 {
				t.Fatalf("exit code 0 with an untrusted server certificate; stdout:\n%s", res.stdout)
			}
			var errLines []string
			for _, l := range strings.Split(strings.TrimSpace(res.stderr), "\n") {
				if strings.HasPrefix(l, "error: ") {
					errLines = append(errLines, l)
				}
			}
			if len(errLines) != 1 || !strings.Contains(errLines[0], "certificate signed by unknown authority") ||
				!strings.Contains(errLines[0], "not trusted by the kubeconfig's certificate-authority") {
				t.Errorf("want one error line naming the untrusted certificate; stderr:\n%s", res.stderr)
			}
		})
	}
	if reqs, err := shared.AuditSince(mark, cluster.AuditFilter{User: user}); err != nil || len(reqs) != 0 {
		t.Errorf("requests reached the API server with an untrusted certificate (err %v):\n%s", err, cluster.SummarizeAudit(reqs))
	}
	// The same user with the right CA is seen by the audit log, so its silence above means
	// nothing was sent, not that the user is invisible.
	mark, err = shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	rbacExec(t, right, time.Minute, "hpa", "explain", "web", "-n", ns)
	if reqs, err := shared.AuditSince(mark, cluster.AuditFilter{User: user}); err != nil || len(reqs) == 0 {
		t.Errorf("with the right CA, no request of %s reached the audit log (err %v)", user, err)
	}
}
