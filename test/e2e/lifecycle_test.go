//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

// What run does when it is stopped, and when two of them share a namespace.

// lifeStopBound is the requirement: Ctrl-C or SIGTERM ends run within 2 seconds.
const lifeStopBound = 2 * time.Second

// lifeStoppingLine is what run says once its context is cancelled (controller.Run).
const lifeStoppingLine = "stopping: no new work is taken"

// lifeProc is a `kubectl hpa run` the test signals itself (startRun only interrupts).
type lifeProc struct {
	cmd  *exec.Cmd
	out  syncBuffer
	done chan struct{}
	// exitedAt is when Wait returned; read after done is closed.
	exitedAt time.Time
	err      error
}

func lifeStart(t *testing.T, k cluster.Kubectl, args ...string) *lifeProc {
	t.Helper()
	// kubectl replaces itself with the plugin (exec), so signals reach kubectl-hpa itself.
	cmd := k.Command(context.Background(), append([]string{"hpa", "run"}, args...)...)
	p := &lifeProc{cmd: cmd, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &p.out, &p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = cmd.Wait()
		p.exitedAt = time.Now()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("kubectl hpa run %s output:\n%s", strings.Join(args, " "), p.out.String())
		}
	})
	return p
}

// waitOutput waits until the process has written want.
//
// It looks every 10ms, not every pollEvery: a test that releases a held request once run says
// it is stopping would otherwise add up to pollEvery to the stop time it measures.
func (p *lifeProc) waitOutput(t *testing.T, bound time.Duration, want string) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !strings.Contains(p.out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("waiting until run prints %q: gave up after %s", want, bound)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// lifeHold holds requests of one user until released: the test's way of landing a signal
// while run has a request in flight. arrived receives once per held request.
type lifeHold struct {
	user    string
	arrived chan string
	release chan struct{}
	once    sync.Once
}

func newLifeHold(user string) *lifeHold {
	return &lifeHold{user: user, arrived: make(chan string, 16), release: make(chan struct{})}
}

func (h *lifeHold) Release() { h.once.Do(func() { close(h.release) }) }

// wait holds the caller until Release or until the request is abandoned by its client.
func (h *lifeHold) wait(r *http.Request, what string) {
	select {
	case h.arrived <- what:
	default:
	}
	select {
	case <-h.release:
	case <-r.Context().Done():
	}
}

// lifeScaleWebhook installs a validating admission webhook on UPDATE deployments/scale in ns,
// served by the test: the scale writes of hold's user wait in admission (the request is in
// flight at the API server) until released; everyone else's are admitted at once. It returns
// once the API server calls it.
func lifeScaleWebhook(t *testing.T, ns string, hold *lifeHold) {
	t.Helper()
	deployments := shared.Client().AppsV1().Deployments(ns)
	holdingWebhook(t, ns, "scale", admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments/scale"}},
		func(r *admissionv1.AdmissionRequest) bool { return r.UserInfo.Username == hold.user }, hold,
		func(ctx context.Context) error {
			sc, err := deployments.GetScale(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			sc.Spec.Replicas++
			_, err = deployments.UpdateScale(ctx, "web", sc, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		})
}

// holdingWebhook installs a validating admission webhook on UPDATE of rule's resources in ns,
// served by the test: the requests held says wait in admission (in flight at the API server)
// until hold is released; the others are admitted at once. probe sends a dry-run update held
// does not hold; holdingWebhook returns once the API server calls the webhook for it.
func holdingWebhook(t *testing.T, ns, name string, rule admissionregistrationv1.Rule, held func(*admissionv1.AdmissionRequest) bool, hold *lifeHold, probe func(context.Context) error) {
	t.Helper()
	cert, caPEM := lifeServingCert(t)
	var probed sync.Once
	probedCh := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		if held(review.Request) {
			hold.wait(r, name+" "+review.Request.Name)
		} else {
			probed.Do(func() { close(probedCh) })
		}
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		review.Request = nil
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&review)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	config := ns + "." + name + ".e2e.kubectl-hpa.io"
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	rule.Scope = ptr.To(admissionregistrationv1.NamespacedScope)
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: config},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "hold." + config,
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To(srv.URL + "/hold"), CABundle: caPEM},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update}, Rule: rule}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](10),
		}},
	}
	wh := shared.Client().AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if _, err := wh.Create(context.Background(), cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = wh.Delete(context.Background(), config, metav1.DeleteOptions{}) })

	// The API server picks webhook configurations up asynchronously: probe with a dry-run
	// update until the webhook sees it.
	eventually(t, 30*time.Second, "the API server calls the "+name+" webhook", func(ctx context.Context) error {
		if err := probe(ctx); err != nil {
			return err
		}
		select {
		case <-probedCh:
			return nil
		default:
			return errors.New("webhook not called yet")
		}
	})
}

// lifeServingCert is a self-signed serving certificate for 127.0.0.1 and its PEM.
func lifeServingCert(t *testing.T) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "life-webhook"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	cert, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		t.Fatal(err)
	}
	return cert, certPEM
}

// lifeHeapster serves the Heapster stand-in's answers on 127.0.0.1 for --heapster-url,
// holding the metric reads of namespace ns until released.
func lifeHeapster(t *testing.T, ns string, hold *lifeHold) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/namespaces/"+ns+"/") {
			hold.wait(r, "metrics "+r.URL.Path)
			if r.Context().Err() != nil {
				return
			}
		}
		shared.HeapsterStandIn().ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// lifeHalfApplied returns the successful scale writes of writes that no successful status
// write of the same HPA follows (the HPA is named like its target in these tests).
func lifeHalfApplied(writes []cluster.AuditRequest) []cluster.AuditRequest {
	var half []cluster.AuditRequest
	for i, w := range writes {
		if w.Resource != "deployments" || w.Subresource != "scale" || w.Code/100 != 2 {
			continue
		}
		followed := false
		for _, s := range writes[i+1:] {
			if s.Resource == "horizontalpodautoscalers" && s.Subresource == "status" && s.Name == w.Name && s.Code/100 == 2 {
				followed = true
				break
			}
		}
		if !followed {
			half = append(half, w)
		}
	}
	return half
}

func lifeCount(writes []cluster.AuditRequest, resource, subresource string) int {
	n := 0
	for _, w := range writes {
		if w.Resource == resource && w.Subresource == subresource && w.Code/100 == 2 {
			n++
		}
	}
	return n
}

func lifeGetLease(ctx context.Context, ns string) (*coordinationv1.Lease, error) {
	return shared.Client().CoordinationV1().Leases(ns).Get(ctx, "kubectl-hpa", metav1.GetOptions{})
}

// TestLifeSignalMidReconcileStopsWithinTwoSecondsReleasingTheLeaseWithNoHalfAppliedDecision
// lands SIGINT or SIGTERM while run has a request in flight, at the two points that matter:
// reading metrics (nothing applied yet: nothing may be written) and writing the scale (the
// decision started: its status write must follow). The request is held by the test (a
// Heapster URL it serves, a validating webhook on the scale) until run has logged that it is
// stopping, so the signal lands there every time.
func TestLifeSignalMidReconcileStopsWithinTwoSecondsReleasingTheLeaseWithNoHalfAppliedDecision(t *testing.T) {
	t.Parallel()
	phases := []struct {
		name string
		// scaleWrite: the signal lands while the scale write is in admission; otherwise
		// while the metrics read is in flight.
		scaleWrite bool
	}{
		{"metrics read in flight", false},
		{"scale write in flight", true},
	}
	signals := []struct {
		name string
		sig  syscall.Signal
	}{
		{"SIGINT", syscall.SIGINT},
		{"SIGTERM", syscall.SIGTERM},
	}
	for _, ph := range phases {
		for _, sg := range signals {
			t.Run(sg.name+" with the "+ph.name, func(t *testing.T) {
				t.Parallel()
				ns := namespace(t, "life-sig")
				user := fmt.Sprintf("e2e:life-%s-%t", strings.ToLower(sg.name), ph.scaleWrite)
				hold := newLifeHold(user)
				defer hold.Release()
				args := []string{"-n", ns, "--sync-period=2s", "-o", "json"}
				if ph.scaleWrite {
					// One replica under an HPA with minReplicas 2: the first reconcile rescales
					// without reading metrics.
					createDeployment(t, ns, deploymentSpec{replicas: 1})
					createHPA(t, ns, hpaSpec{min: 2})
					lifeScaleWebhook(t, ns, hold)
				} else {
					createDeployment(t, ns, deploymentSpec{replicas: 2})
					createHPA(t, ns, hpaSpec{})
					args = append(args, "--metrics-source=heapster", "--heapster-url="+lifeHeapster(t, ns, hold))
				}
				mark, err := shared.AuditMark()
				if err != nil {
					t.Fatal(err)
				}
				p := lifeStart(t, pluginAs(t, user), args...)
				select {
				case what := <-hold.arrived:
					t.Logf("holding %s", what)
				case <-p.done:
					t.Fatalf("run exited before its request was held: %v", p.err)
				case <-time.After(90 * time.Second):
					t.Fatal("run sent no request to hold within 90s")
				}
				lease, err := lifeGetLease(context.Background(), ns)
				if err != nil {
					t.Fatalf("reading the Lease while run reconciles: %v", err)
				}
				if ptr.Deref(lease.Spec.HolderIdentity, "") == "" {
					t.Fatalf("nobody holds the Lease while run reconciles: %+v", lease.Spec)
				}

				signalled := time.Now()
				if err := p.cmd.Process.Signal(sg.sig); err != nil {
					t.Fatal(err)
				}
				// Release the request only once run has seen the signal.
				p.waitOutput(t, lifeStopBound, lifeStoppingLine)
				hold.Release()
				select {
				case <-p.done:
				case <-time.After(30 * time.Second):
					t.Fatal("run still running 30s after the signal")
				}
				if took := p.exitedAt.Sub(signalled); took > lifeStopBound {
					t.Errorf("run exited %v after %s, want within %v", took.Round(time.Millisecond), sg.name, lifeStopBound)
				} else {
					t.Logf("run exited %v after %s", took.Round(time.Millisecond), sg.name)
				}
				if code := p.cmd.ProcessState.ExitCode(); code != 0 {
					t.Errorf("exit code %d after %s, want 0 (a clean stop)", code, sg.name)
				}

				lifeCheckReleased(t, ns, signalled)

				writes := pluginWrites(t, mark, user)
				if half := lifeHalfApplied(writes); len(half) > 0 {
					t.Errorf("scale writes without their status write (a half-applied decision):\n%s\nall writes:\n%s", cluster.SummarizeAudit(half), cluster.SummarizeAudit(writes))
				}
				scales, statuses := lifeCount(writes, "deployments", "scale"), lifeCount(writes, "horizontalpodautoscalers", "status")
				if ph.scaleWrite {
					// The held scale write went through after the signal, so its decision completes.
					sc, err := shared.Client().AppsV1().Deployments(ns).GetScale(context.Background(), "web", metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					hpa, err := shared.Client().AutoscalingV2().HorizontalPodAutoscalers(ns).Get(context.Background(), "web", metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					if scales != 1 || statuses != 1 || sc.Spec.Replicas != 2 || hpa.Status.DesiredReplicas != 2 || hpa.Status.LastScaleTime == nil {
						t.Errorf("scale writes %d, status writes %d, spec.replicas %d, status desired %d, lastScaleTime %v; want the decision 1 -> 2 applied whole: 1, 1, 2, 2, set\nwrites:\n%s",
							scales, statuses, sc.Spec.Replicas, hpa.Status.DesiredReplicas, hpa.Status.LastScaleTime, cluster.SummarizeAudit(writes))
					}
					// Its event too: events recorded during the stop's grace are written before exit.
					events, err := shared.Client().CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
						FieldSelector: fields.OneTermEqualSelector("reason", "SuccessfulRescale").String()})
					if err != nil {
						t.Fatal(err)
					}
					if len(events.Items) != 1 || !strings.HasPrefix(events.Items[0].Message, "New size: 2;") {
						t.Errorf("SuccessfulRescale events after the stop: %+v, want one, New size: 2", events.Items)
					}
				} else if scales+statuses != 0 {
					t.Errorf("run wrote %d scales and %d statuses after a signal during its metrics read, want none (the decision never started)\nwrites:\n%s",
						scales, statuses, cluster.SummarizeAudit(writes))
				}
			})
		}
	}
}

// lifeCheckReleased checks that run released the Lease of ns after signalled, as client-go's
// ReleaseOnCancel leaves one: no holder, a 1s duration, renewed (and acquired) at the moment
// of release.
func lifeCheckReleased(t *testing.T, ns string, signalled time.Time) {
	t.Helper()
	lease, err := lifeGetLease(context.Background(), ns)
	if err != nil {
		t.Fatal(err)
	}
	if h := ptr.Deref(lease.Spec.HolderIdentity, ""); h != "" || ptr.Deref(lease.Spec.LeaseDurationSeconds, 0) != 1 ||
		lease.Spec.RenewTime == nil || lease.Spec.RenewTime.Time.Before(signalled.Truncate(time.Microsecond)) {
		t.Errorf("Lease after the stop: holder %q, duration %ds, renewed %v (signal at %v); want released: no holder, 1s, renewed after the signal",
			h, ptr.Deref(lease.Spec.LeaseDurationSeconds, 0), lease.Spec.RenewTime, signalled)
	}
}

// klogInfoLine is a klog text line at info severity ("I1203 17:31:08.123456 ...").
var klogInfoLine = regexp.MustCompile(`^I\d{4} \d{2}:\d{2}:\d{2}\.\d+ `)

// TestLifeCtrlCWithOutputPipedToAReaderThatGoesStillReleasesTheLease is `kubectl hpa run -n NS
// 2>&1 | tee log` stopped by Ctrl-C: the terminal's SIGINT ends tee as well, so run's next line
// (saying it stops) meets a pipe with no reader. run must still exit 0 and release its Lease,
// not die of SIGPIPE holding it. Its output before the first decision is its own lines, no
// klog line at the default verbosity.
func TestLifeCtrlCWithOutputPipedToAReaderThatGoesStillReleasesTheLease(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "life-pipe")
	createDeployment(t, ns, deploymentSpec{replicas: 1})
	createHPA(t, ns, hpaSpec{min: 2})
	rd, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := pluginAs(t, "e2e:life-pipe").Command(context.Background(), "hpa", "run", "-n", ns, "--sync-period=2s")
	cmd.Stdout, cmd.Stderr = wr, wr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Only run holds the pipe's write end now, as with a shell's pipe.
	wr.Close()
	var waitErr error
	done := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})

	// tee: read run's lines until its first decision for web.
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(rd)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var read []string
	deadline := time.After(90 * time.Second)
	for decided := false; !decided; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("run's output ended before its first decision:\n%s", strings.Join(read, "\n"))
			}
			read = append(read, l)
			decided = strings.Contains(l, " "+ns+"/web ")
		case <-deadline:
			t.Fatalf("no decision from run within 90s:\n%s", strings.Join(read, "\n"))
		}
	}
	for _, l := range read {
		if klogInfoLine.MatchString(l) {
			t.Errorf("a klog info line in run's output at the default verbosity: %s", l)
		}
	}

	// Ctrl-C: tee goes first (the reader closes), run gets SIGINT.
	rd.Close()
	signalled := time.Now()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		if waitErr != nil {
			t.Errorf("run ended with %v after SIGINT with its output's reader gone, want exit 0 (a clean stop)", waitErr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run still running 30s after SIGINT")
	}
	lifeCheckReleased(t, ns, signalled)
}

// TestLifeOnlyTheLeaseHolderWritesAndTheStandbyTakesOverAfterAKill starts two runs on one
// namespace as two users, checks in the audit log that only the Lease holder writes, then
// SIGKILLs the holder (no release) and measures the takeover.
//
// What bounds the takeover: the standby (client-go's leader elector) considers the Lease
// expired LeaseDuration after it *observed* the holder's last renewal, on its own clock, and
// polls every RetryPeriod stretched by up to JitterFactor (1.2) after its previous poll ends.
// So, with R the holder's last renewTime, O the end of the standby's first Lease read after
// the holder's last Lease write (the audit log's; it has observed the last renewal by then)
// and H the standby's acquireTime:
//   - H >= R, to the second, + LeaseDuration: it never takes over a Lease that may still be
//     valid (see below for the second);
//   - H < O + LeaseDuration + (1+JitterFactor)*RetryPeriod, the poll that notices the expiry,
//     plus one request's latency and a timer's lateness (allowed 1s here). O is measured, so a
//     slow read on a loaded machine does not eat into that allowance.
func TestLifeOnlyTheLeaseHolderWritesAndTheStandbyTakesOverAfterAKill(t *testing.T) {
	t.Parallel()
	const (
		leaseDuration = 4 * time.Second
		retryPeriod   = 500 * time.Millisecond
		latency       = time.Second
	)
	ns := namespace(t, "life-lease")
	// Below minReplicas and, after the kill, a higher minReplicas: decisions that need no
	// metrics, so the writes come at once.
	createDeployment(t, ns, deploymentSpec{replicas: 1})
	createHPA(t, ns, hpaSpec{min: 2})
	mark, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	users := []string{"e2e:life-lease-a", "e2e:life-lease-b"}
	var procs []*lifeProc
	for _, u := range users {
		procs = append(procs, lifeStart(t, pluginAs(t, u), "-n", ns, "--sync-period=1s", "-o", "json",
			"--leader-elect-lease-duration="+leaseDuration.String(), "--leader-elect-renew-deadline=2s",
			"--leader-elect-retry-period="+retryPeriod.String()))
	}

	holder := -1
	eventually(t, 60*time.Second, "one run scales web to minReplicas 2", func(context.Context) error {
		for i, u := range users {
			if lifeCount(pluginWrites(t, mark, u), "deployments", "scale") > 0 {
				holder = i
				return nil
			}
		}
		return errors.New("no scale write yet")
	})
	standby := 1 - holder
	eventually(t, 30*time.Second, "the standby has read the Lease a few times", func(context.Context) error {
		reqs, err := shared.AuditSince(mark, cluster.AuditFilter{User: users[standby]})
		if err != nil {
			return err
		}
		reads := 0
		for _, q := range reqs {
			if q.Resource == "leases" && !q.IsWrite() {
				reads++
			}
		}
		if reads < 4 {
			return fmt.Errorf("%d lease reads", reads)
		}
		return nil
	})
	lease, err := lifeGetLease(context.Background(), ns)
	if err != nil {
		t.Fatal(err)
	}
	holderID := ptr.Deref(lease.Spec.HolderIdentity, "")
	if !strings.Contains(procs[holder].out.String(), holderID) || holderID == "" {
		t.Fatalf("the Lease holder %q is not the run that wrote (%s)", holderID, users[holder])
	}

	killMark, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if err := procs[holder].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-procs[holder].done
	// Dead: its last renewal is in the Lease now.
	lease, err = lifeGetLease(context.Background(), ns)
	if err != nil {
		t.Fatal(err)
	}
	if h := ptr.Deref(lease.Spec.HolderIdentity, ""); h != holderID || lease.Spec.RenewTime == nil {
		t.Fatalf("Lease right after the kill: holder %q, renewed %v; want still %q", h, lease.Spec.RenewTime, holderID)
	}
	lastRenew, transitions := lease.Spec.RenewTime.Time, ptr.Deref(lease.Spec.LeaseTransitions, 0)

	var before []cluster.AuditRequest
	for _, w := range pluginWrites(t, mark, users[standby]) {
		if w.Resource != "leases" && w.Received.Before(killed) {
			before = append(before, w)
		}
	}
	if len(before) > 0 {
		t.Errorf("the standby wrote while the other run held the Lease:\n%s", cluster.SummarizeAudit(before))
	}

	// Something for the survivor to apply as soon as it leads.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		hpas := shared.Client().AutoscalingV2().HorizontalPodAutoscalers(ns)
		hpa, err := hpas.Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		hpa.Spec.MinReplicas = ptr.To[int32](3)
		_, err = hpas.Update(context.Background(), hpa, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}

	eventually(t, 60*time.Second, "the standby takes the Lease over", func(ctx context.Context) error {
		l, err := lifeGetLease(ctx, ns)
		if err != nil {
			return err
		}
		if h := ptr.Deref(l.Spec.HolderIdentity, ""); h == holderID || h == "" {
			return fmt.Errorf("holder %q", h)
		}
		lease = l
		return nil
	})
	if !strings.Contains(procs[standby].out.String(), *lease.Spec.HolderIdentity) {
		t.Errorf("new holder %q is not the standby run", *lease.Spec.HolderIdentity)
	}
	if got := ptr.Deref(lease.Spec.LeaseTransitions, 0); got != transitions+1 {
		t.Errorf("leaseTransitions %d after the takeover, want %d", got, transitions+1)
	}
	acquired := lease.Spec.AcquireTime.Time
	observed := lifeStandbyObserved(t, mark, users[holder], users[standby])
	latest := observed.Add(leaseDuration + time.Duration((1+leaderelection.JitterFactor)*float64(retryPeriod)) + latency)
	// The standby counts the lease duration from when it first saw the record change, and
	// client-go compares records with their times in whole seconds (LeaderElectionRecord's
	// metav1.Time): renewals within one second look the same to it. So the takeover comes a
	// lease duration after it saw the first renewal of lastRenew's second, at the earliest a
	// lease duration after that second began (kube-controller-manager's elector does the
	// same). Both stamps are wall-clock readings of two processes while the elector waits on
	// the monotonic clock, hence wallClockSlack.
	const wallClockSlack = 100 * time.Millisecond
	earliest := lastRenew.Truncate(time.Second).Add(leaseDuration - wallClockSlack)
	if acquired.Before(earliest) || acquired.After(latest) {
		t.Errorf("takeover at %s, %v after the holder's last renewal (at %s), want at or after %s (a lease duration after that renewal's second began) and by %s (the standby read the Lease after the holder's last write at %s)",
			acquired.Format(time.RFC3339Nano), acquired.Sub(lastRenew), lastRenew.Format(time.RFC3339Nano), earliest.Add(wallClockSlack).Format(time.RFC3339Nano),
			latest.Format(time.RFC3339Nano), observed.Format(time.RFC3339Nano))
	}

	var first *cluster.AuditRequest
	eventually(t, 60*time.Second, "the survivor applies minReplicas 3", func(context.Context) error {
		for _, w := range pluginWrites(t, killMark, users[standby]) {
			if (w.Resource == "deployments" || w.Resource == "horizontalpodautoscalers") && w.Code/100 == 2 {
				first = &w
				return nil
			}
		}
		return errors.New("no write by the survivor yet")
	})
	if first.Received.Before(acquired) {
		t.Errorf("the survivor wrote at %v, before it acquired the Lease at %v: %s", first.Received, acquired, first)
	}
	waitSpecReplicas(t, ns, 3)
	t.Logf("kill -> takeover %v (standby's first read after the last renewal -> takeover %v, at most %v; the renewal's second's start -> takeover %v, at least %v); takeover -> first write %v (%s %s/%s)",
		acquired.Sub(killed).Round(time.Millisecond), acquired.Sub(observed).Round(time.Millisecond), latest.Sub(observed),
		acquired.Sub(lastRenew.Truncate(time.Second)).Round(time.Millisecond), leaseDuration,
		first.Received.Sub(acquired).Round(time.Millisecond), first.Verb, first.Resource, first.Subresource)
}

// lifeStandbyObserved is when the standby's first read of the Lease after the holder's last
// successful Lease write since mark completed, from the audit log.
func lifeStandbyObserved(t *testing.T, mark cluster.AuditMark, holder, standby string) time.Time {
	t.Helper()
	var lastWrite time.Time
	for _, w := range pluginWrites(t, mark, holder) {
		if w.Resource == "leases" && w.Code/100 == 2 && w.Completed.After(lastWrite) {
			lastWrite = w.Completed
		}
	}
	if lastWrite.IsZero() {
		t.Fatalf("no Lease write by %s in the audit log", holder)
	}
	reqs, err := shared.AuditSince(mark, cluster.AuditFilter{User: standby})
	if err != nil {
		t.Fatal(err)
	}
	var observed time.Time
	for _, r := range reqs {
		if r.Resource == "leases" && r.Verb == "get" && r.Received.After(lastWrite) && !r.Completed.IsZero() && (observed.IsZero() || r.Completed.Before(observed)) {
			observed = r.Completed
		}
	}
	if observed.IsZero() {
		t.Fatalf("no Lease read by %s after %s's last Lease write at %s", standby, holder, lastWrite.Format(time.RFC3339Nano))
	}
	return observed
}
