// Package cluster starts a real Kubernetes control plane for end-to-end tests and the demo:
// etcd, kube-apiserver (certificates generated here, RBAC, an audit log of every request,
// front-proxy for the aggregator), kube-controller-manager with the deployment, replicaset and
// serviceaccount controllers (optionally the upstream HPA controller), a node stand-in that
// plays scheduler and kubelet for its nodes and serves its metrics from a load model,
// the real metrics-server behind v1beta1.metrics.k8s.io, the real Heapster (reading the node
// stand-in's Summary API) behind the kube-system/heapster Service and the Heapster stand-in
// behind kube-system/heapster-standin, both reached through the API server's service proxy,
// and, for the tests that ask for it, a real Prometheus scraping the node stand-in's
// /metrics/cadvisor.
//
// The service proxy and the aggregator refuse loopback endpoints, so everything runs inside a
// private network namespace with an address of its own on lo: call RunIsolated first thing in
// main (or TestMain). No traffic leaves that namespace.
package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/clock"

	heapsterstandin "github.com/kubectl-hpa/kubectl-hpa/test/standin/heapster"
)

// DefaultPrometheusScrapeInterval is Config.PrometheusScrapeInterval when it is zero.
const DefaultPrometheusScrapeInterval = 5 * time.Second

// Config says what to start. The zero value (plus BinDir) is a complete cluster.
type Config struct {
	// BinDir holds kube-apiserver, kube-controller-manager, etcd, metrics-server, heapster and
	// prometheus (hack/build-testbin.sh prints it).
	BinDir string
	// BinWait is how long Prometheus, which starts when a test first asks for it, waits for its
	// binary while BinDir links it to a build not done yet (make test starts the tests before
	// Prometheus is built); zero does not wait.
	BinWait time.Duration
	// Dir is where certificates, kubeconfigs, data and logs go; a temporary directory,
	// removed by Stop, when empty.
	Dir string
	// IP is the namespace's own address, put on lo by RunIsolated (default 10.200.0.1).
	IP string
	// Ports; defaults: etcd 2379 (and +1 for peers), API server 6443, kubelets 10250 and up,
	// metrics-server 8443, Heapster 8082 (its own default), Heapster stand-in 8083, Prometheus
	// 9090 (its own default), the custom metrics adapter 8444.
	EtcdPort, APIPort, KubeletPort, MetricsServerPort, HeapsterPort, HeapsterStandInPort, PrometheusPort, CustomMetricsPort int
	// CustomMetricsExporterPort serves the custom metrics adapter's values to Prometheus.
	CustomMetricsExporterPort int
	// Nodes is how many Node objects the node stand-in plays (default 1; more only
	// WithoutHeapster), each on its own kubelet port from KubeletPort; pods are bound to them
	// in turn.
	Nodes int
	// PodReadyDelay is how long after creation a pod becomes Running and Ready (default 1s).
	PodReadyDelay time.Duration
	// MetricResolution is metrics-server's scrape interval (default and minimum 10s).
	MetricResolution time.Duration
	// HeapsterResolution is Heapster's --metric-resolution (default and minimum 5s; Heapster's
	// own default is 60s).
	HeapsterResolution time.Duration
	// PrometheusScrapeInterval is how often Prometheus scrapes each node's /metrics/cadvisor
	// (default DefaultPrometheusScrapeInterval).
	PrometheusScrapeInterval time.Duration
	// UpstreamHPA also runs kube-controller-manager's horizontal-pod-autoscaler controller.
	UpstreamHPA bool
	// WithoutHeapster starts neither the real Heapster nor the Heapster stand-in: the soak
	// reads metrics.k8s.io alone, and at 50,000 pods Heapster's Summary scrapes every 5 s and
	// the stand-in's copy of the load model every second cost the test process a third of its
	// CPU, beside the processes the soak measures.
	WithoutHeapster bool
	// ControllerManagerQPS and ControllerManagerBurst bound kube-controller-manager's API client
	// (default 200 and 400: upstream's 20 and 30 take over eight minutes to create 10,000 pods).
	ControllerManagerQPS   float32
	ControllerManagerBurst int
	// ControllerManagerArgs are appended to kube-controller-manager's flags.
	ControllerManagerArgs []string
	// Progress, when set, receives one line per start step with its duration.
	Progress func(format string, args ...any)
}

func (c *Config) defaults() error {
	if c.BinDir == "" {
		return errors.New("cluster: Config.BinDir is empty; run hack/build-testbin.sh and pass the directory it prints")
	}
	if c.IP == "" {
		c.IP = DefaultIP
	}
	setDefault := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	setDefault(&c.EtcdPort, 2379)
	setDefault(&c.APIPort, 6443)
	setDefault(&c.KubeletPort, 10250)
	setDefault(&c.MetricsServerPort, 8443)
	setDefault(&c.HeapsterPort, 8082)
	setDefault(&c.HeapsterStandInPort, 8083)
	setDefault(&c.PrometheusPort, 9090)
	setDefault(&c.CustomMetricsPort, 8444)
	setDefault(&c.CustomMetricsExporterPort, 8445)
	setDefault(&c.Nodes, 1)
	setDefault(&c.ControllerManagerBurst, 400)
	if c.ControllerManagerQPS == 0 {
		c.ControllerManagerQPS = 200
	}
	if c.PodReadyDelay == 0 {
		c.PodReadyDelay = time.Second
	}
	if c.MetricResolution == 0 {
		c.MetricResolution = 10 * time.Second
	}
	if c.MetricResolution < 10*time.Second {
		return fmt.Errorf("cluster: MetricResolution %s is below metrics-server's minimum of 10s", c.MetricResolution)
	}
	if c.HeapsterResolution == 0 {
		c.HeapsterResolution = 5 * time.Second
	}
	if c.HeapsterResolution < 5*time.Second {
		return fmt.Errorf("cluster: HeapsterResolution %s is below Heapster's minimum of 5s", c.HeapsterResolution)
	}
	if c.PrometheusScrapeInterval == 0 {
		c.PrometheusScrapeInterval = DefaultPrometheusScrapeInterval
	}
	if c.Nodes > 1 && !c.WithoutHeapster {
		// Heapster dials every node's InternalIP on one kubelet port; the stand-in's nodes
		// share the address and differ by port.
		return fmt.Errorf("cluster: Nodes %d: Heapster reads one kubelet port, so a cluster with Heapster has one node", c.Nodes)
	}
	if c.Progress == nil {
		c.Progress = func(string, ...any) {}
	}
	return nil
}

// Cluster is a running control plane. Methods are safe for concurrent use.
type Cluster struct {
	cfg     Config
	ip      net.IP
	dir     string
	ownDir  bool
	pki     *pki
	logDir  string
	load    *LoadModel
	audit   auditLog
	client  kubernetes.Interface
	restCfg *rest.Config

	heapster  *heapsterstandin.Server
	heapsters []*Heapster // real ones, the cluster's first

	promMu     sync.Mutex  // serializes Prometheus' first start
	prometheus *Prometheus // started by the first call to Prometheus

	cmMu          sync.Mutex     // serializes the custom metrics adapter's first start
	customMetrics *CustomMetrics // started by the first call to CustomMetrics

	cancel   context.CancelFunc // stops the in-process stand-ins
	node     *nodeStandIn
	heapSrv  *http.Server
	mirrorWG sync.WaitGroup

	mu        sync.Mutex
	etcd      *process
	apiServer *process
	kcm       *process
	metrics   *process
	exited    []int
}

// Start brings up the whole cluster or, on any failure, stops what it started and returns an
// error that names the failing component and quotes its log.
func Start(ctx context.Context, cfg Config) (_ *Cluster, err error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg, ip: net.ParseIP(cfg.IP).To4(), load: NewLoadModel(clock.RealClock{})}
	if c.ip == nil {
		return nil, fmt.Errorf("cluster: IP %q is not an IPv4 address", cfg.IP)
	}
	if !hasLocalAddress(c.ip) {
		return nil, fmt.Errorf("cluster: %s is not an address of this network namespace; call cluster.RunIsolated first (the service proxy and the aggregator need a non-loopback address)", c.ip)
	}
	c.dir = cfg.Dir
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "kubectl-hpa-e2e-"); err != nil {
			return nil, fmt.Errorf("cluster: creating run directory: %w", err)
		}
		c.ownDir = true
	}
	c.logDir = filepath.Join(c.dir, "logs")
	if err := os.MkdirAll(c.logDir, 0o755); err != nil {
		return nil, fmt.Errorf("cluster: creating log directory: %w", err)
	}
	c.audit = auditLog{path: filepath.Join(c.logDir, "audit.log")}
	defer func() {
		if err != nil {
			if stopErr := c.Stop(); stopErr != nil {
				err = errors.Join(err, stopErr)
			}
		}
	}()
	step := func(name string, f func() error) error {
		t0 := time.Now()
		if err := f(); err != nil {
			return err
		}
		cfg.Progress("%-28s %6.2fs", name, time.Since(t0).Seconds())
		return nil
	}
	if err := step("certificates", func() (err error) { c.pki, err = newPKI(filepath.Join(c.dir, "pki"), c.ip); return err }); err != nil {
		return nil, err
	}
	if err := step("kubeconfigs", c.writeConfigFiles); err != nil {
		return nil, err
	}
	if err := step("etcd", func() error { return c.startEtcd(ctx) }); err != nil {
		return nil, err
	}
	if err := step("kube-apiserver", func() error { return c.startAPIServer(ctx) }); err != nil {
		return nil, err
	}
	if c.restCfg, err = c.restConfig("admin"); err != nil {
		return nil, err
	}
	if c.client, err = kubernetes.NewForConfig(c.restCfg); err != nil {
		return nil, fmt.Errorf("cluster: admin client: %w", err)
	}
	if err := step("bootstrap objects", func() error { return c.bootstrap(ctx) }); err != nil {
		return nil, err
	}
	if err := step("kube-controller-manager", func() error { return c.startControllerManager(ctx, cfg.UpstreamHPA, nil) }); err != nil {
		return nil, err
	}
	standInCtx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	if err := step("node stand-in", func() error { return c.startNode(standInCtx) }); err != nil {
		return nil, err
	}
	heapsterErr := make(chan error, 1)
	if cfg.WithoutHeapster {
		heapsterErr <- nil
	} else {
		if err := step("heapster stand-in", func() error { return c.startHeapsterStandIn(ctx, standInCtx) }); err != nil {
			return nil, err
		}
		// Heapster is ready after its first scrape, metrics-server once the aggregator has seen
		// it: both wait on timers, so they start side by side.
		go func() {
			heapsterErr <- step("heapster (real)", func() error {
				_, err := c.StartHeapster(ctx, HeapsterService, cfg.HeapsterPort)
				return err
			})
		}()
	}
	msErr := step("metrics-server", func() error { return c.startMetricsServer(ctx) })
	if err := errors.Join(msErr, <-heapsterErr); err != nil {
		return nil, err
	}
	return c, nil
}

// Dir is the run directory (certificates, kubeconfigs, logs/).
func (c *Cluster) Dir() string { return c.dir }

// LogDir holds one log per component and audit.log.
func (c *Cluster) LogDir() string { return c.logDir }

// AdminKubeconfig authenticates as a cluster administrator (system:masters).
func (c *Cluster) AdminKubeconfig() string { return filepath.Join(c.dir, "admin.kubeconfig") }

// PluginKubeconfig authenticates as PluginUser (bound to cluster-admin), so that the plugin's
// requests stand apart from everyone else's in the audit log.
func (c *Cluster) PluginKubeconfig() string { return filepath.Join(c.dir, "plugin.kubeconfig") }

// KubeconfigFor writes (once) a kubeconfig for another user of the plugin's group, bound to
// cluster-admin like PluginUser, so that two plugin processes can be told apart in the audit log.
func (c *Cluster) KubeconfigFor(user string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	name := "user-" + strings.NewReplacer(":", "-", "/", "-").Replace(user)
	path := c.kubeconfig(name)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	kp, err := issueCert(filepath.Join(c.dir, "pki"), name, c.pki.ca, certSpec{
		commonName: user, orgs: []string{pluginGroup}, usage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return "", err
	}
	return path, c.writeKubeconfig(name, kp)
}

// Client is an administrator clientset.
func (c *Cluster) Client() kubernetes.Interface { return c.client }

// Dynamic is a dynamic client of the cluster, as its admin.
func (c *Cluster) Dynamic() (dynamic.Interface, error) { return dynamic.NewForConfig(c.restCfg) }

// RESTConfig is the administrator client configuration (a copy).
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.restCfg) }

// Load is the load model the node stand-in and the Heapster stand-in report from.
func (c *Cluster) Load() *LoadModel { return c.load }

// HeapsterStandIn is the Heapster stand-in behind HeapsterStandInService; it mirrors the load
// model every second, and a test may add model time series to it or make it misbehave.
func (c *Cluster) HeapsterStandIn() *heapsterstandin.Server { return c.heapster }

// AuditMark returns the current end of the audit log.
func (c *Cluster) AuditMark() (AuditMark, error) { return c.audit.mark() }

// AuditSince returns the requests logged after mark that match f.
func (c *Cluster) AuditSince(mark AuditMark, f AuditFilter) ([]AuditRequest, error) {
	return c.audit.since(mark, f)
}

// Pids lists the control-plane processes started so far (running or not), for leak checks.
func (c *Cluster) Pids() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	pids := append([]int(nil), c.exited...)
	for _, p := range append(c.heapsterProcs(), c.prometheusProc(), c.customMetricsProc(), c.metrics, c.kcm, c.apiServer, c.etcd) {
		if p != nil {
			pids = append(pids, p.Pid())
		}
	}
	return pids
}

// MetricsServerPid is the running metrics-server's process id in this PID namespace, or 0,
// for measuring its CPU time.
func (c *Cluster) MetricsServerPid() int { return c.pidOf(&c.metrics) }

// ControllerManagerPid is the running kube-controller-manager's process id in this PID
// namespace, or 0.
func (c *Cluster) ControllerManagerPid() int { return c.pidOf(&c.kcm) }

func (c *Cluster) pidOf(slot **process) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := *slot; p != nil && !p.exited() {
		return p.Pid()
	}
	return 0
}

// Stop stops the Heapsters, Prometheus, metrics-server, kube-controller-manager and the stand-ins, then the API server,
// then etcd (SIGTERM, SIGKILL after 10s each), and removes the run directory if Start made it.
// It returns once every process has been reaped.
func (c *Cluster) Stop() error {
	var errs []error
	c.mu.Lock()
	c.stopCustomMetricsFeeds()
	for _, p := range append(c.heapsterProcs(), c.prometheusProc(), c.customMetricsProc(), c.metrics, c.kcm) {
		c.stopProcess(p)
	}
	c.mu.Unlock()
	if c.cancel != nil {
		c.cancel()
	}
	if c.node != nil {
		c.node.stop()
	}
	if c.heapSrv != nil {
		_ = c.heapSrv.Close()
	}
	c.mirrorWG.Wait()
	c.mu.Lock()
	for _, p := range []*process{c.apiServer, c.etcd} {
		c.stopProcess(p)
	}
	c.mu.Unlock()
	if c.ownDir && os.Getenv(KeepEnv) == "" {
		errs = append(errs, os.RemoveAll(c.dir))
	}
	return errors.Join(errs...)
}

// heapsterProcs are the real Heapsters' processes. c.mu is held.
func (c *Cluster) heapsterProcs() []*process {
	var ps []*process
	for _, h := range c.heapsters {
		ps = append(ps, h.proc)
	}
	return ps
}

// prometheusProc is Prometheus' process, nil before it starts. c.mu is held.
func (c *Cluster) prometheusProc() *process {
	if c.prometheus == nil {
		return nil
	}
	return c.prometheus.proc
}

func (c *Cluster) stopProcess(p *process) {
	if p != nil && p.stop() {
		c.cfg.Progress("%s did not exit within %s of SIGTERM and was killed", p.name, stopGrace)
	}
}

// KeepEnv, when set, keeps the run directory (logs, audit log) after Stop for inspection.
const KeepEnv = "KUBECTL_HPA_E2E_KEEP"

// AdminToken is a bearer token of the administrator, for clients that cannot use certificates.
const AdminToken = "e2e-admin-token"

func (c *Cluster) tokenFile() string       { return filepath.Join(c.dir, "pki", "tokens.csv") }
func (c *Cluster) auditPolicyFile() string { return filepath.Join(c.dir, "audit-policy.yaml") }

func (c *Cluster) writeConfigFiles() error {
	if err := os.WriteFile(c.tokenFile(), []byte(AdminToken+","+adminUser+",e2e-admin,"+systemMastersGroup+"\n"), 0o600); err != nil {
		return fmt.Errorf("cluster: writing token file: %w", err)
	}
	if err := os.WriteFile(c.auditPolicyFile(), []byte(auditPolicy), 0o644); err != nil {
		return fmt.Errorf("cluster: writing audit policy: %w", err)
	}
	for name, kp := range map[string]*keyPair{
		"admin": c.pki.admin, "plugin": c.pki.plugin, "kube-controller-manager": c.pki.controllerMgr,
		"metrics-server": c.pki.metricsServer, "node-standin": c.pki.nodeStandIn, "heapster": c.pki.heapster,
	} {
		if err := c.writeKubeconfig(name, kp); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) writeKubeconfig(name string, kp *keyPair) error {
	cfg := clientcmdapi.NewConfig()
	server := "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(c.cfg.APIPort))
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: c.pki.ca.certPEM}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: kp.certPEM, ClientKeyData: kp.keyPEM}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: name, Namespace: "default"}
	cfg.CurrentContext = "e2e"
	if err := clientcmd.WriteToFile(*cfg, c.kubeconfig(name)); err != nil {
		return fmt.Errorf("cluster: writing %s kubeconfig: %w", name, err)
	}
	return nil
}

func (c *Cluster) kubeconfig(name string) string { return filepath.Join(c.dir, name+".kubeconfig") }

func (c *Cluster) restConfig(name string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig(name))
	if err != nil {
		return nil, fmt.Errorf("cluster: loading %s kubeconfig: %w", name, err)
	}
	// The harness creates objects in bursts (pods, namespaces); client-side throttling would
	// only slow tests down.
	cfg.QPS, cfg.Burst = 200, 400
	cfg.UserAgent = "kubectl-hpa-e2e-harness"
	return cfg, nil
}

func (c *Cluster) hostPort(port int) string {
	return net.JoinHostPort(c.ip.String(), strconv.Itoa(port))
}

func (c *Cluster) startEtcd(ctx context.Context) error {
	client := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(c.cfg.EtcdPort))
	peer := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(c.cfg.EtcdPort+1))
	for _, url := range []string{client, peer} {
		if err := checkPortFree("etcd", strings.TrimPrefix(url, "http://")); err != nil {
			return err
		}
	}
	p, err := startProcess("etcd", filepath.Join(c.cfg.BinDir, "etcd"), []string{
		"--name=e2e", "--data-dir=" + filepath.Join(c.dir, "etcd"),
		"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=e2e=" + peer,
		// A test cluster's data is thrown away; fsync would only cost time on a shared disk.
		"--unsafe-no-fsync", "--log-level=warn",
	}, c.logDir)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.etcd = p
	c.mu.Unlock()
	hc := &http.Client{Timeout: 2 * time.Second}
	return p.waitReady(ctx, 30*time.Second, func(ctx context.Context) error {
		return Probe(ctx, hc, client+"/health")
	})
}

func (c *Cluster) apiServerArgs() []string {
	p := c.pki
	return []string{
		"--etcd-servers=http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(c.cfg.EtcdPort)),
		// Only lo exists in the private namespace: listening on every address serves both
		// 127.0.0.1 (kubeconfigs) and the namespace's own address (advertised).
		"--bind-address=0.0.0.0", "--secure-port=" + strconv.Itoa(c.cfg.APIPort),
		"--advertise-address=" + c.ip.String(),
		"--tls-cert-file=" + p.apiServer.certFile, "--tls-private-key-file=" + p.apiServer.keyFile,
		"--client-ca-file=" + p.ca.certFile,
		"--token-auth-file=" + c.tokenFile(),
		"--service-account-key-file=" + p.saPublicKeyPEM, "--service-account-signing-key-file=" + p.saKeyFile,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode=RBAC",
		"--requestheader-client-ca-file=" + p.frontProxyCA.certFile,
		"--requestheader-allowed-names=" + frontProxyClientCN,
		"--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + p.frontProxy.certFile, "--proxy-client-key-file=" + p.frontProxy.keyFile,
		// No kube-proxy: the aggregator must dial endpoint addresses, not ClusterIPs.
		"--enable-aggregator-routing=true",
		"--audit-policy-file=" + c.auditPolicyFile(),
		"--audit-log-path=" + c.audit.path, "--audit-log-format=json", "--audit-log-mode=blocking",
		"--audit-log-maxsize=0",
		"--profiling=false",
	}
}

func (c *Cluster) startAPIServer(ctx context.Context) error {
	if err := checkPortFree("kube-apiserver", net.JoinHostPort("0.0.0.0", strconv.Itoa(c.cfg.APIPort))); err != nil {
		return err
	}
	p, err := startProcess("kube-apiserver", filepath.Join(c.cfg.BinDir, "kube-apiserver"), c.apiServerArgs(), c.logDir)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.apiServer = p
	c.mu.Unlock()
	return c.waitAPIServer(ctx, p)
}

func (c *Cluster) waitAPIServer(ctx context.Context, p *process) error {
	pool := x509.NewCertPool()
	pool.AddCert(c.pki.ca.cert)
	cert, err := tls.X509KeyPair(c.pki.admin.certPEM, c.pki.admin.keyPEM)
	if err != nil {
		return fmt.Errorf("cluster: admin key pair: %w", err)
	}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	}}
	defer hc.CloseIdleConnections()
	url := "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(c.cfg.APIPort)) + "/readyz"
	return p.waitReady(ctx, 90*time.Second, func(ctx context.Context) error { return Probe(ctx, hc, url) })
}

// RestartAPIServer stops the API server (SIGTERM) and starts it again with the same flags,
// returning once it is ready. Clients reconnect by themselves; watches are re-established.
func (c *Cluster) RestartAPIServer(ctx context.Context) error {
	if err := c.StopAPIServer(); err != nil {
		return err
	}
	return c.StartAPIServer(ctx)
}

// StopAPIServer stops the API server and returns once it has exited: from then on every
// client, aggregated APIs and the service proxy included, gets connection refused until
// StartAPIServer. etcd keeps the state. The API server closes its port at SIGTERM but may
// linger on open watches for long after; it gets apiServerStopGrace, then SIGKILL.
func (c *Cluster) StopAPIServer() error {
	return c.stopComponent(&c.apiServer, "kube-apiserver", apiServerStopGrace)
}

// apiServerStopGrace is how long StopAPIServer waits after SIGTERM: enough to finish the
// requests in flight, short enough that an outage lasts what the test asks for.
const apiServerStopGrace = 2 * time.Second

// StartAPIServer starts the API server stopped by StopAPIServer again with the same flags and
// returns once /readyz passes.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	if err := c.checkStopped(&c.apiServer, "kube-apiserver"); err != nil {
		return err
	}
	// A killed API server may have left half a line in the audit log; the next line must not
	// be glued to it.
	if err := c.audit.endLine(); err != nil {
		return err
	}
	if err := c.startAPIServer(ctx); err != nil {
		return err
	}
	return c.restartHeapsters(ctx)
}

// stopComponent stops *slot's process (SIGTERM, SIGKILL after grace) and records its pid for
// the leak check; the process stays in *slot (exited) so that Pids and Stop keep seeing it
// until it is replaced.
func (c *Cluster) stopComponent(slot **process, name string, grace time.Duration) error {
	c.mu.Lock()
	p := *slot
	c.mu.Unlock()
	if p == nil || p.exited() {
		return fmt.Errorf("cluster: %s is not running", name)
	}
	if p.stopWithin(grace) {
		c.cfg.Progress("%s did not exit within %s of SIGTERM and was killed", p.name, grace)
	}
	c.mu.Lock()
	c.exited = append(c.exited, p.Pid())
	c.mu.Unlock()
	return nil
}

// checkStopped refuses to start a second copy of a component that still runs.
func (c *Cluster) checkStopped(slot **process, name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := *slot; p != nil && !p.exited() {
		return fmt.Errorf("cluster: %s is still running (pid %d); stop it first", name, p.Pid())
	}
	return nil
}

// startControllerManager starts kube-controller-manager; extra flags come last, so that they
// override the harness's own (the last occurrence of a flag wins).
func (c *Cluster) startControllerManager(ctx context.Context, upstreamHPA bool, extra []string) error {
	controllers := "deployment,replicaset,serviceaccount"
	if upstreamHPA {
		controllers += ",horizontalpodautoscaling"
	}
	args := append([]string{
		"--kubeconfig=" + c.kubeconfig("kube-controller-manager"),
		"--controllers=" + controllers,
		"--leader-elect=false", "--secure-port=0", "--use-service-account-credentials=false",
		"--horizontal-pod-autoscaler-sync-period=5s",
		"--kube-api-qps=" + strconv.FormatFloat(float64(c.cfg.ControllerManagerQPS), 'f', -1, 32),
		"--kube-api-burst=" + strconv.Itoa(c.cfg.ControllerManagerBurst),
	}, c.cfg.ControllerManagerArgs...)
	args = append(args, extra...)
	p, err := startProcess("kube-controller-manager", filepath.Join(c.cfg.BinDir, "kube-controller-manager"), args, c.logDir)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.kcm = p
	c.mu.Unlock()
	// The serviceaccount controller creating "default" in the default namespace proves the
	// controller manager is connected and running its controllers.
	return p.waitReady(ctx, 60*time.Second, func(ctx context.Context) error {
		_, err := c.client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

// RestartControllerManager restarts kube-controller-manager, with or without the upstream
// horizontal-pod-autoscaler controller, with the harness's flags.
func (c *Cluster) RestartControllerManager(ctx context.Context, upstreamHPA bool) error {
	return c.RestartControllerManagerWith(ctx, upstreamHPA)
}

// RestartControllerManagerWith restarts kube-controller-manager with extra flags after the
// harness's, which they override: e.g. --horizontal-pod-autoscaler-sync-period=15s, upstream's
// default, instead of the harness's 5s. The flags last until the next restart.
func (c *Cluster) RestartControllerManagerWith(ctx context.Context, upstreamHPA bool, extra ...string) error {
	if err := c.stopComponent(&c.kcm, "kube-controller-manager", stopGrace); err != nil {
		return err
	}
	return c.startControllerManager(ctx, upstreamHPA, extra)
}

func (c *Cluster) startNode(ctx context.Context) error {
	cfg, err := c.restConfig("node-standin")
	if err != nil {
		return err
	}
	cfg.UserAgent = "kubectl-hpa-e2e-node-standin"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("node stand-in: client: %w", err)
	}
	cert, err := tls.X509KeyPair(c.pki.kubelet.certPEM, c.pki.kubelet.keyPEM)
	if err != nil {
		return fmt.Errorf("node stand-in: kubelet key pair: %w", err)
	}
	cas := x509.NewCertPool()
	cas.AddCert(c.pki.ca.cert)
	n := &nodeStandIn{client: client, clock: clock.RealClock{}, load: c.load, ip: c.ip, readyDelay: c.cfg.PodReadyDelay, cert: cert, clientCAs: cas}
	for i := range c.cfg.Nodes {
		n.nodes = append(n.nodes, fmt.Sprintf("node-%d", i+1))
		n.ports = append(n.ports, c.cfg.KubeletPort+i)
		if err := checkPortFree("node stand-in (kubelet "+n.nodes[i]+")", c.hostPort(n.ports[i])); err != nil {
			return err
		}
	}
	c.node = n
	return n.start(ctx)
}

// Probe GETs url with hc and wants 200.
func Probe(ctx context.Context, hc *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

func hasLocalAddress(ip net.IP) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}
