package metrics

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	heapsterstandin "github.com/kubectl-hpa/kubectl-hpa/test/standin/heapster"
)

// countingAPIServer stands for a cluster that must not be asked anything.
func countingAPIServer(t *testing.T) (*rest.Config, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		http.NotFound(w, nil)
	}))
	t.Cleanup(ts.Close)
	return &rest.Config{Host: ts.URL}, &n
}

func TestPlainHTTPToAnotherHostNeedsTheFlag(t *testing.T) {
	tests := []struct {
		name       string
		url        string
		insecure   bool
		wantErr    string
		wantDetail string
	}{
		{name: "refused without the flag, and the error names it", url: "http://10.0.0.7:8082",
			wantErr: "refusing plain http --heapster-url to 10.0.0.7, which is not loopback: use https, kubectl port-forward to 127.0.0.1, or pass --heapster-insecure-http"},
		{name: "a host name is no loopback either", url: "http://heapster.kube-system.svc:80",
			wantErr: "refusing plain http --heapster-url to heapster.kube-system.svc"},
		{name: "allowed with the flag", url: "http://10.0.0.7:8082", insecure: true, wantDetail: "heapster at http://10.0.0.7:8082"},
		{name: "loopback needs no flag", url: "http://127.0.0.1:8082", wantDetail: "heapster at http://127.0.0.1:8082"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, requests := countingAPIServer(t)
			o := DefaultConfig()
			o.HeapsterURL, o.HeapsterInsecureHTTP = tc.url, tc.insecure
			// Building the client sends nothing: neither to the cluster nor to Heapster,
			// whose address is not on this machine.
			_, sel, err := newClient(t, o, cfg, clocktesting.NewFakePassiveClock(minute(0)))
			checkErr(t, err, tc.wantErr)
			if sel.Detail != tc.wantDetail {
				t.Errorf("selection detail %q, want %q", sel.Detail, tc.wantDetail)
			}
			if n := requests.Load(); n != 0 {
				t.Errorf("the cluster was asked %d times", n)
			}
		})
	}
}

// writeCA writes the PEM of ts's certificate to a file and returns its path.
func writeCA(t *testing.T, ts *httptest.Server) string {
	t.Helper()
	return writePEM(t, ts.Certificate().Raw)
}

func writePEM(t *testing.T, der []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ca.pem")
	data := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// otherCA returns a self-signed CA certificate (DER) unrelated to httptest's.
func otherCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "another CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func TestHTTPSHeapsterURLIsVerified(t *testing.T) {
	// This case's read once ran into the 10 s read timeout in a full make test on a busy machine,
	// and the test saw a timeout instead of the refusal it checks. The first handshake that
	// verifies against the system's CAs loads them (a few hundred files here), which only this
	// case does: load them before, and give each read a minute, since trust, not time, is what
	// this test is about.
	if _, err := x509.SystemCertPool(); err != nil {
		t.Fatal(err)
	}
	standin, err := heapsterstandin.New(clocktesting.NewFakePassiveClock(minute(0)), *cpuScenario(1, [][]int64{{250}}, minute(0)))
	if err != nil {
		t.Fatal(err)
	}
	heapster := httptest.NewUnstartedServer(standin)
	// Refused handshakes are what the test expects, not news for its log.
	heapster.Config.ErrorLog = log.New(io.Discard, "", 0)
	heapster.StartTLS()
	defer heapster.Close()
	notPEM := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		ca   string
		// wantBuildErr fails NewClient; wantErr fails the read.
		wantBuildErr string
		wantErr      []string
	}{
		{name: "a self-signed certificate is refused with the system's CAs",
			wantErr: []string{"heapster at " + heapster.URL + " presented a certificate this client does not trust", "x509:", "pass --heapster-certificate-authority"}},
		{name: "a self-signed certificate is refused with another CA", ca: writePEM(t, otherCA(t)),
			wantErr: []string{"does not trust", "x509:"}},
		{name: "the certificate's CA makes it trusted", ca: writeCA(t, heapster)},
		{name: "a CA file without PEM is refused", ca: notPEM, wantBuildErr: "holds no PEM certificate"},
		{name: "a missing CA file is refused", ca: filepath.Join(t.TempDir(), "absent.pem"), wantBuildErr: "reading --heapster-certificate-authority"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := standin.Stats(testNamespace).Requests
			cfg, _ := countingAPIServer(t)
			o := DefaultConfig()
			o.HeapsterURL, o.HeapsterCAFile = heapster.URL, tc.ca
			o.Timeout = time.Minute
			c, _, err := newClient(t, o, cfg, clocktesting.NewFakePassiveClock(minute(0)))
			checkErr(t, err, tc.wantBuildErr)
			if tc.wantBuildErr != "" {
				return
			}
			got, _, err := c.PodResource(context.Background(), testNamespace, corev1.ResourceCPU, testSelector, "")
			served := standin.Stats(testNamespace).Requests - before
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(podSamplesAt(minute(0), time.Minute, podName(0), 250), got.Map()); diff != "" {
					t.Errorf("samples (-want +got):\n%s", diff)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, samples %v", got)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if served != 0 {
				t.Errorf("an untrusted server got %d requests", served)
			}
		})
	}
}

// TestMetricsTimeoutBoundsEveryRead wires Config.Timeout through NewClient: a source that
// never answers fails the read, naming the timeout, and the request is abandoned.
func TestMetricsTimeoutBoundsEveryRead(t *testing.T) {
	slow := heapsterstandin.Fault{Kind: heapsterstandin.FaultSlow, Delay: time.Hour}
	standin, err := heapsterstandin.New(clocktesting.NewFakePassiveClock(minute(0)), *cpuScenario(1, [][]int64{{250}}, minute(0)))
	if err != nil {
		t.Fatal(err)
	}
	if err := standin.SetFault(testNamespace, slow); err != nil {
		t.Fatal(err)
	}
	const resourcePath = "/apis/metrics.k8s.io/v1beta1/namespaces/test-namespace/pods"
	tests := []struct {
		name    string
		source  string
		wantErr []string
	}{
		{name: "heapster through the service proxy", source: SourceHeapster,
			wantErr: []string{"heapster via service proxy kube-system/http:heapster: timed out after 200ms (--metrics-timeout), the request was abandoned"}},
		{name: "metrics.k8s.io", source: SourceMetricsAPI, wantErr: []string{resourcePath}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var abandoned atomic.Int64
			api := &fakeAPIServer{groups: []metav1.APIGroup{group("metrics.k8s.io", "v1beta1")}, heapster: standin}
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == resourcePath {
					<-r.Context().Done()
					abandoned.Add(1)
					return
				}
				api.ServeHTTP(w, r)
			}))
			defer ts.Close()
			o := DefaultConfig()
			o.Source, o.Timeout = tc.source, 200*time.Millisecond
			c, _, err := newClient(t, o, &rest.Config{Host: ts.URL}, clocktesting.NewFakePassiveClock(minute(0)))
			if err != nil {
				t.Fatal(err)
			}
			before := standin.Stats(testNamespace).Abandoned
			_, _, err = c.PodResource(context.Background(), testNamespace, corev1.ResourceCPU, testSelector, "")
			if err == nil || !isTimeout(err) {
				t.Fatalf("error %v, want a timeout", err)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			// The server sees the client go away on its own schedule.
			for abandoned.Load()+int64(standin.Stats(testNamespace).Abandoned-before) == 0 {
				time.Sleep(time.Millisecond)
			}
		})
	}
}
