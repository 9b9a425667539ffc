package cluster

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Prometheus is a real Prometheus server (Debian's 2.42 package, or v3 built from its module:
// hack/build-testbin.sh) that scrapes every node's /metrics/cadvisor as a cluster's Prometheus
// does: over https with a client certificate the node stand-in authorizes with a
// SubjectAccessReview for nodes/metrics, each node's series labelled as Kubernetes' discovery
// (role node) labels them (instance the node's name, the node's labels). The targets are listed
// in its configuration rather than discovered: the cluster's nodes are fixed at its start, and
// Debian builds Prometheus without Kubernetes' discovery. Its data lives in the run directory,
// so a restart keeps the history. The cluster starts it on the first call to Prometheus.
type Prometheus struct {
	c    *Cluster
	url  string
	args []string
	proc *process // replaced by Restart; c.mu guards it
}

const (
	// prometheusUser is Prometheus' identity: it reads nodes/metrics.
	prometheusUser = "e2e:prometheus"
	// PrometheusJob is the scrape job of the nodes' /metrics/cadvisor, the job label of its series.
	PrometheusJob = "kubernetes-cadvisor"
	// CustomMetricsJob is the scrape job of the custom metrics adapter's values, when the
	// adapter runs before Prometheus starts.
	CustomMetricsJob = "custom-metrics"
)

// Prometheus returns the cluster's Prometheus server, starting it on the first call; it returns
// once Prometheus has scraped every node successfully. Tests that do not call it pay nothing for
// it.
func (c *Cluster) Prometheus(ctx context.Context) (*Prometheus, error) {
	c.promMu.Lock()
	defer c.promMu.Unlock()
	if c.prometheus != nil {
		return c.prometheus, nil
	}
	p, err := startWhenBuilt(ctx, c, "prometheus", filepath.Join(c.cfg.BinDir, "prometheus"), func() (*Prometheus, error) { return c.startPrometheus(ctx) })
	if err != nil {
		return nil, err
	}
	c.mu.Lock() // Pids and Stop read it under c.mu
	c.prometheus = p
	c.mu.Unlock()
	return p, nil
}

func (c *Cluster) startPrometheus(ctx context.Context) (*Prometheus, error) {
	addr := c.hostPort(c.cfg.PrometheusPort)
	if err := checkPortFree("prometheus", addr); err != nil {
		return nil, err
	}
	if err := c.bindPrometheus(ctx); err != nil {
		return nil, err
	}
	dir := filepath.Join(c.dir, "prometheus")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("prometheus: creating its directory: %w", err)
	}
	kp, err := issueCert(filepath.Join(c.dir, "pki"), "prometheus", c.pki.ca, certSpec{
		commonName: prometheusUser, usage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, err
	}
	config := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(config, []byte(c.prometheusConfig(kp)), 0o644); err != nil {
		return nil, fmt.Errorf("prometheus: writing its configuration: %w", err)
	}
	p := &Prometheus{c: c, url: "http://" + addr, args: []string{
		"--config.file=" + config,
		"--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + addr,
		"--log.level=info",
	}}
	if err := p.start(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// prometheusConfig is the scrape configuration of a cluster's Prometheus for cAdvisor's
// metrics, with the nodes as static targets carrying the labels Kubernetes' discovery (role
// node, and a labelmap of the node's labels) gives them, and the client certificate instead of
// the pod's ServiceAccount token.
func (c *Cluster) prometheusConfig(kp *keyPair) string {
	interval := c.cfg.PrometheusScrapeInterval.String()
	lines := []string{
		"global:",
		"  scrape_interval: " + interval,
		"  scrape_timeout: " + interval,
		"  evaluation_interval: " + interval,
		"scrape_configs:",
		"- job_name: " + PrometheusJob,
		"  scheme: https",
		"  metrics_path: /metrics/cadvisor",
		"  tls_config:",
		"    ca_file: " + c.pki.ca.certFile,
		"    cert_file: " + kp.certFile,
		"    key_file: " + kp.keyFile,
		"  static_configs:",
	}
	for i, name := range c.node.nodes {
		lines = append(lines,
			"  - targets: ['"+net.JoinHostPort(c.node.ip.String(), strconv.Itoa(c.node.ports[i]))+"']",
			"    labels:",
			"      instance: "+name,
			"      kubernetes_io_hostname: "+name,
		)
	}
	c.mu.Lock()
	cm := c.customMetrics
	c.mu.Unlock()
	if cm != nil {
		// The custom metrics adapter's values, as the application's own /metrics.
		lines = append(lines,
			"- job_name: "+CustomMetricsJob,
			"  static_configs:",
			"  - targets: ['"+c.hostPort(c.cfg.CustomMetricsExporterPort)+"']",
		)
	}
	return strings.Join(append(lines, ""), "\n")
}

// bindPrometheus gives prometheusUser what a cluster's Prometheus is granted for node metrics.
func (c *Cluster) bindPrometheus(ctx context.Context) error {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e:prometheus"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"nodes/metrics"}, Verbs: []string{"get"}},
		},
	}
	if _, err := c.client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("cluster: creating ClusterRole %s: %w", role.Name, err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e:prometheus"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: prometheusUser}},
	}
	if _, err := c.client.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("cluster: binding %s to %s: %w", prometheusUser, role.Name, err)
	}
	return nil
}

// start runs the process and waits until every node's target is up.
func (p *Prometheus) start(ctx context.Context) error {
	proc, err := startProcess("prometheus", filepath.Join(p.c.cfg.BinDir, "prometheus"), p.args, p.c.logDir)
	if err != nil {
		return err
	}
	p.c.mu.Lock()
	p.proc = proc
	p.c.mu.Unlock()
	api, err := p.API()
	if err != nil {
		return err
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	err = proc.waitReady(ctx, 90*time.Second, func(ctx context.Context) error {
		if err := Probe(ctx, hc, p.url+"/-/ready"); err != nil {
			return err
		}
		targets, err := api.Targets(ctx)
		if err != nil {
			return err
		}
		up := 0
		for _, t := range targets.Active {
			if t.ScrapePool == PrometheusJob && t.Health == promv1.HealthGood {
				up++
			}
		}
		if up < p.c.cfg.Nodes {
			return fmt.Errorf("%d of %d node targets up (%+v)", up, p.c.cfg.Nodes, targets.Active)
		}
		return nil
	})
	if err != nil {
		proc.stop() // not left running unreferenced when the first start fails
	}
	return err
}

// URL is the server's address, http://IP:port, for its HTTP API.
func (p *Prometheus) URL() string { return p.url }

// API is a client of the server's HTTP API.
func (p *Prometheus) API() (promv1.API, error) {
	client, err := promapi.NewClient(promapi.Config{Address: p.url})
	if err != nil {
		return nil, fmt.Errorf("prometheus: API client: %w", err)
	}
	return promv1.NewAPI(client), nil
}

// Stop stops the server; its data stays in the run directory for Restart.
func (p *Prometheus) Stop() error { return p.c.stopComponent(&p.proc, "prometheus", stopGrace) }

// Restart starts the server again on the same data (stopping it first if it runs), and returns
// once it scrapes every node again.
func (p *Prometheus) Restart(ctx context.Context) error {
	p.c.mu.Lock()
	running := p.proc != nil && !p.proc.exited()
	p.c.mu.Unlock()
	if running {
		if err := p.Stop(); err != nil {
			return err
		}
	}
	return p.start(ctx)
}

// QueryValue runs an instant query and returns its vector's samples by the value of label.
func (p *Prometheus) QueryValue(ctx context.Context, query, label string, at time.Time) (map[string]float64, error) {
	api, err := p.API()
	if err != nil {
		return nil, err
	}
	v, _, err := api.Query(ctx, query, at)
	if err != nil {
		return nil, fmt.Errorf("prometheus: query %s: %w", query, err)
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, errors.New("prometheus: query " + query + " returned " + v.Type().String() + ", not a vector")
	}
	out := map[string]float64{}
	for _, s := range vec {
		out[string(s.Metric[model.LabelName(label)])] = float64(s.Value)
	}
	return out, nil
}
