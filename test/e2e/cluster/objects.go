package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"

	heapsterstandin "github.com/kubectl-hpa/kubectl-hpa/test/standin/heapster"
)

const (
	// DefaultIP is the namespace's own address: the node's InternalIP, where metrics-server, the
	// kubelets, Heapster and the Heapster stand-in listen.
	DefaultIP = "10.200.0.1"
	// HeapsterService is the Service (in kube-system) in front of the real Heapster: the
	// plugin's --heapster-service default.
	HeapsterService = "heapster"
	// HeapsterStandInService is the Service (in kube-system) in front of the Heapster stand-in,
	// for the faults the real Heapster cannot be made to show on demand.
	HeapsterStandInService = "heapster-standin"
	heapsterStandInPod     = "heapster-standin-0"
	msService              = "metrics-server"
	// heapsterMirrorInterval is how often the Heapster stand-in copies the load model; Heapster
	// itself had a 60s resolution, so one second is fresher than anything it ever served.
	heapsterMirrorInterval = time.Second
)

var apiServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// bootstrap creates what every run needs before the controllers start: the plugin user's role
// binding, Heapster's role bindings and kube-system's default ServiceAccount (the Heapster pods
// there need it at once).
func (c *Cluster) bootstrap(ctx context.Context) error {
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-plugin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: pluginGroup}},
	}
	if _, err := c.client.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("cluster: binding the plugin user: %w", err)
	}
	if err := c.bindHeapster(ctx); err != nil {
		return err
	}
	return c.ensureServiceAccount(ctx, metav1.NamespaceSystem)
}

func (c *Cluster) ensureServiceAccount(ctx context.Context, ns string) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}
	if _, err := c.client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("cluster: creating default ServiceAccount in %s: %w", ns, err)
	}
	return nil
}

// CreateNamespace creates a namespace named after prefix (with a random suffix) that pods can
// be created in right away.
func (c *Cluster) CreateNamespace(ctx context.Context, prefix string) (string, error) {
	ns, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-", Labels: map[string]string{"e2e.kubectl-hpa.io/test": "true"}},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("cluster: creating namespace %s-*: %w", prefix, err)
	}
	// ReplicaSets retry until the serviceaccount controller catches up, but creating the
	// account here saves that round of back-off.
	return ns.Name, c.ensureServiceAccount(ctx, ns.Name)
}

// EnsureNamespace creates the namespace name if it does not exist yet (for the demo, whose
// namespace has a fixed name).
func (c *Cluster) EnsureNamespace(ctx context.Context, name string) error {
	_, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("cluster: creating namespace %s: %w", name, err)
	}
	return c.ensureServiceAccount(ctx, name)
}

// startHeapsterStandIn serves the Heapster stand-in on the namespace's address and makes it
// reachable the way Heapster is: a kube-system Service (heapster-standin) whose endpoint is a
// pod's IP, proxied by the API server.
func (c *Cluster) startHeapsterStandIn(ctx, standInCtx context.Context) error {
	srv, err := heapsterstandin.New(nil, heapsterstandin.Scenario{})
	if err != nil {
		return fmt.Errorf("heapster stand-in: %w", err)
	}
	c.heapster = srv
	addr := c.hostPort(c.cfg.HeapsterStandInPort)
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("heapster stand-in: listening on %s: %w", addr, err)
	}
	c.heapSrv = &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = c.heapSrv.Serve(l) }()
	c.mirrorWG.Add(1)
	go func() {
		defer c.mirrorWG.Done()
		t := time.NewTicker(heapsterMirrorInterval)
		defer t.Stop()
		for {
			c.mirrorHeapster()
			select {
			case <-standInCtx.Done():
				return
			case <-t.C:
			}
		}
	}()

	ns := metav1.NamespaceSystem
	labels := map[string]string{"k8s-app": HeapsterStandInService}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: heapsterStandInPod, Namespace: ns, Labels: labels, Annotations: map[string]string{PodIPAnnotation: c.ip.String()}},
		Spec: corev1.PodSpec{
			Containers:                   []corev1.Container{{Name: "heapster", Image: "e2e/heapster-standin:1.5"}},
			AutomountServiceAccountToken: new(bool),
		},
	}
	if _, err := c.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("heapster stand-in: creating pod: %w", err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: HeapsterStandInService, Namespace: ns, Labels: labels},
		Spec: corev1.ServiceSpec{
			Selector: labels,
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(int32(c.cfg.HeapsterStandInPort))}},
		},
	}
	if err := c.createService(ctx, svc, &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: heapsterStandInPod}); err != nil {
		return fmt.Errorf("heapster stand-in: %w", err)
	}
	// The service proxy only uses an endpoint whose target pod reports that IP, which the node
	// stand-in sets once it has marked the pod running.
	path := fmt.Sprintf("/api/v1/namespaces/%s/services/http:%s:/proxy/healthz", ns, HeapsterStandInService)
	return c.waitFor(ctx, "heapster stand-in behind the service proxy", 60*time.Second, func(ctx context.Context) error {
		return c.client.CoreV1().RESTClient().Get().AbsPath(path).Do(ctx).Error()
	})
}

// mirrorHeapster copies the load model into the Heapster stand-in, keeping any model time
// series a test added.
func (c *Cluster) mirrorHeapster() {
	samples := c.load.Samples("")
	_ = c.heapster.Update(func(sc *heapsterstandin.Scenario) {
		series := map[types.NamespacedName]map[string][]heapsterstandin.Point{}
		for _, p := range sc.Pods {
			series[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p.Series
		}
		pods := make([]heapsterstandin.Pod, 0, len(samples))
		for _, s := range samples {
			p := heapsterstandin.Pod{Namespace: s.Namespace, Name: s.Name, Labels: s.Labels,
				Series: series[types.NamespacedName{Namespace: s.Namespace, Name: s.Name}]}
			for i, name := range s.Containers {
				ct := heapsterstandin.Container{Name: name, CPUMilli: idleCPUMilli, MemoryBytes: idleMemoryBytes}
				if i == 0 {
					ct.CPUMilli, ct.MemoryBytes = s.CPUMilli, s.MemoryBytes
				}
				p.Containers = append(p.Containers, ct)
			}
			pods = append(pods, p)
		}
		sc.Pods = pods
	})
}

func (c *Cluster) startMetricsServer(ctx context.Context) error {
	ns := metav1.NamespaceSystem
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: msService, Namespace: ns},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{
			Name: "https", Port: 443, TargetPort: intstr.FromInt32(int32(c.cfg.MetricsServerPort)),
		}}},
	}
	if err := c.createService(ctx, svc, nil); err != nil {
		return fmt.Errorf("metrics-server: %w", err)
	}
	dyn, err := c.Dynamic()
	if err != nil {
		return fmt.Errorf("metrics-server: dynamic client: %w", err)
	}
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": metricsAPIService},
		"spec": map[string]any{
			"group": "metrics.k8s.io", "version": "v1beta1",
			"service":               map[string]any{"name": msService, "namespace": ns, "port": int64(443)},
			"insecureSkipTLSVerify": true, "groupPriorityMinimum": int64(100), "versionPriority": int64(100),
		},
	}}
	if _, err := dyn.Resource(apiServiceGVR).Create(ctx, apiService, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("metrics-server: registering %s: %w", metricsAPIService, err)
	}
	p, err := c.runMetricsServer()
	if err != nil {
		return err
	}
	return p.waitReady(ctx, 60*time.Second, func(ctx context.Context) error {
		return c.metricsAPIAvailable(ctx, dyn, true)
	})
}

// runMetricsServer launches the metrics-server process.
func (c *Cluster) runMetricsServer() (*process, error) {
	if err := checkPortFree("metrics-server", c.hostPort(c.cfg.MetricsServerPort)); err != nil {
		return nil, err
	}
	c.mu.Lock()
	resolution := c.cfg.MetricResolution
	c.mu.Unlock()
	timeout := resolution / 2
	kubeconfig := c.kubeconfig("metrics-server")
	p, err := startProcess("metrics-server", filepath.Join(c.cfg.BinDir, "metrics-server"), []string{
		"--kubeconfig=" + kubeconfig, "--authentication-kubeconfig=" + kubeconfig, "--authorization-kubeconfig=" + kubeconfig,
		"--secure-port=" + strconv.Itoa(c.cfg.MetricsServerPort), "--bind-address=" + c.ip.String(),
		"--cert-dir=" + filepath.Join(c.dir, "metrics-server-certs"),
		"--kubelet-insecure-tls", "--kubelet-preferred-address-types=InternalIP", "--kubelet-use-node-status-port",
		"--metric-resolution=" + resolution.String(), "--kubelet-request-timeout=" + timeout.String(),
	}, c.logDir)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.metrics = p
	c.mu.Unlock()
	return p, nil
}

// metricsAPIService is the APIService metrics-server is registered under.
const metricsAPIService = "v1beta1.metrics.k8s.io"

// metricsAPIAvailable returns nil once metrics-server's APIService's Available condition is want.
func (c *Cluster) metricsAPIAvailable(ctx context.Context, dyn dynamic.Interface, want bool) error {
	return c.apiServiceAvailable(ctx, dyn, metricsAPIService, want)
}

// apiServiceAvailable returns nil once the APIService name's Available condition is want.
func (c *Cluster) apiServiceAvailable(ctx context.Context, dyn dynamic.Interface, name string, want bool) error {
	obj, err := dyn.Resource(apiServiceGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	wantStatus := map[bool]string{true: "True", false: "False"}[want]
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, cond := range conds {
		m, _ := cond.(map[string]any)
		if m["type"] == "Available" {
			if m["status"] == wantStatus {
				return nil
			}
			return fmt.Errorf("APIService %s: Available=%v (%v: %v), want %s", name, m["status"], m["reason"], m["message"], wantStatus)
		}
	}
	return fmt.Errorf("APIService %s has no Available condition yet", name)
}

// StopMetricsServer stops the metrics-server process and returns once the aggregator reports
// v1beta1.metrics.k8s.io as not Available. Requests for metrics.k8s.io fail from the moment
// the process is gone; StartMetricsServer brings it back.
func (c *Cluster) StopMetricsServer(ctx context.Context) error {
	if err := c.stopComponent(&c.metrics, "metrics-server", stopGrace); err != nil {
		return err
	}
	dyn, err := c.Dynamic()
	if err != nil {
		return fmt.Errorf("metrics-server: dynamic client: %w", err)
	}
	return c.waitFor(ctx, "APIService "+metricsAPIService+" not Available", time.Minute, c.availability(dyn, false))
}

// RestartMetricsServer restarts metrics-server scraping every resolution (at least 10s; the
// harness's default is 10s, metrics-server's own manifest sets 15s) and returns once it serves
// metrics again. The resolution lasts until the next restart.
func (c *Cluster) RestartMetricsServer(ctx context.Context, resolution time.Duration) error {
	if resolution < 10*time.Second {
		return fmt.Errorf("cluster: metric resolution %s is below metrics-server's minimum of 10s", resolution)
	}
	if err := c.StopMetricsServer(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	c.cfg.MetricResolution = resolution
	c.mu.Unlock()
	return c.StartMetricsServer(ctx)
}

// StartMetricsServer starts metrics-server again after StopMetricsServer and returns once the
// APIService is Available and metrics-server serves metrics (it has none before two scrapes,
// one MetricResolution apart): from then on a metrics.k8s.io read answers with data.
func (c *Cluster) StartMetricsServer(ctx context.Context) error {
	if err := c.checkStopped(&c.metrics, "metrics-server"); err != nil {
		return err
	}
	dyn, err := c.Dynamic()
	if err != nil {
		return fmt.Errorf("metrics-server: dynamic client: %w", err)
	}
	p, err := c.runMetricsServer()
	if err != nil {
		return err
	}
	available := c.availability(dyn, true)
	return p.waitReady(ctx, 2*time.Minute, func(ctx context.Context) error {
		if err := available(ctx); err != nil {
			return err
		}
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		raw, err := c.client.CoreV1().RESTClient().Get().AbsPath("/apis/metrics.k8s.io/v1beta1/nodes").DoRaw(ctx)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(raw, &list); err != nil {
			return fmt.Errorf("decoding node metrics: %w", err)
		}
		if len(list.Items) == 0 {
			return errors.New("metrics-server has no node metrics yet")
		}
		return nil
	})
}

// availability is a probe passing once the APIService's Available condition is want. The
// aggregator re-checks an APIService on its own only every 30s (longer while it backs off
// after failures); touching an annotation makes it check at once, so a caller waits for the
// check, not for the aggregator's timer.
func (c *Cluster) availability(dyn dynamic.Interface, want bool) func(context.Context) error {
	return c.availabilityOf(dyn, metricsAPIService, want)
}

// availabilityOf is availability of the APIService name.
func (c *Cluster) availabilityOf(dyn dynamic.Interface, name string, want bool) func(context.Context) error {
	var poked time.Time
	return func(ctx context.Context) error {
		err := c.apiServiceAvailable(ctx, dyn, name, want)
		if err == nil || time.Since(poked) < time.Second {
			return err
		}
		poked = time.Now()
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"e2e.kubectl-hpa.io/recheck":%q}}}`, poked.Format(time.RFC3339Nano))
		if _, perr := dyn.Resource(apiServiceGVR).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); perr != nil {
			return errors.Join(err, fmt.Errorf("asking the aggregator to re-check: %w", perr))
		}
		return err
	}
}

// createService creates a Service and, since no endpointslice controller runs, its one
// EndpointSlice pointing at the namespace's address.
func (c *Cluster) createService(ctx context.Context, svc *corev1.Service, target *corev1.ObjectReference) error {
	if _, err := c.client.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	port := svc.Spec.Ports[0]
	ready := true
	tcp := corev1.ProtocolTCP
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: svc.Name + "-e2e", Namespace: svc.Namespace,
			Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &port.Name, Port: &port.TargetPort.IntVal, Protocol: &tcp}},
		Endpoints: []discoveryv1.Endpoint{{
			Addresses: []string{c.ip.String()}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}, TargetRef: target,
		}},
	}
	if _, err := c.client.DiscoveryV1().EndpointSlices(svc.Namespace).Create(ctx, slice, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating endpointslice for %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return nil
}

// waitFor polls check until it succeeds or timeout passes.
func (c *Cluster) waitFor(ctx context.Context, what string, timeout time.Duration, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not ready after %s: %w", what, timeout, err)
		case <-time.After(pollInterval):
		}
	}
}
