package cluster

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Heapster is a real Heapster process (the binary hack/build-heapster.sh builds) behind a
// Service of kube-system, as clusters ran it: its pod's IP is the namespace's address, the API
// server's service proxy reaches it over http, and it reads every node's Summary API (the node
// stand-in's /stats/summary, over https with a client certificate, on the kubelet port) every
// resolution.
type Heapster struct {
	c       *Cluster
	service string
	port    int
	args    []string
	proc    *process // replaced when restartHeapsters restarts it; c.mu guards it
}

// heapsterUser is Heapster's identity, bound to the API server's own system:heapster role
// (the reads it makes) and to nodes/stats (what the kubelet's authorizer asks for /stats/).
const heapsterUser = "e2e:heapster"

// StartHeapster starts another real Heapster behind Service kube-system/service, listening on
// port of the namespace's address, and returns once the service proxy reaches its /healthz
// (which passes after its first scrape). The cluster's own, behind HeapsterService, is started
// by Start; a test that stops one or takes its endpoints away starts its own.
func (c *Cluster) StartHeapster(ctx context.Context, service string, port int) (*Heapster, error) {
	if err := checkPortFree("heapster "+service, c.hostPort(port)); err != nil {
		return nil, err
	}
	source := url.URL{RawQuery: url.Values{
		"inClusterConfig": {"false"}, "auth": {c.kubeconfig("heapster")},
		"kubeletHttps": {"true"}, "kubeletPort": {strconv.Itoa(c.cfg.KubeletPort)},
	}.Encode()}
	args := []string{
		"--source=kubernetes.summary_api:" + source.String(),
		"--metric-resolution=" + c.cfg.HeapsterResolution.String(),
		"--listen-ip=" + c.ip.String(), "--heapster-port=" + strconv.Itoa(port),
	}
	p, err := startProcess(service, filepath.Join(c.cfg.BinDir, "heapster"), args, c.logDir)
	if err != nil {
		return nil, err
	}
	h := &Heapster{c: c, service: service, port: port, proc: p, args: args}
	c.mu.Lock()
	c.heapsters = append(c.heapsters, h)
	c.mu.Unlock()

	ns := metav1.NamespaceSystem
	labels := map[string]string{"k8s-app": service}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: service + "-0", Namespace: ns, Labels: labels, Annotations: map[string]string{PodIPAnnotation: c.ip.String()}},
		Spec: corev1.PodSpec{
			Containers:                   []corev1.Container{{Name: "heapster", Image: "e2e/heapster:v1.6.0-beta.1"}},
			AutomountServiceAccountToken: new(bool),
		},
	}
	if _, err := c.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("heapster %s: creating pod: %w", service, err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: service, Namespace: ns, Labels: labels},
		Spec: corev1.ServiceSpec{
			Selector: labels,
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(int32(port))}},
		},
	}
	if err := c.createService(ctx, svc, &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod.Name}); err != nil {
		return nil, fmt.Errorf("heapster %s: %w", service, err)
	}
	if err := h.waitReady(ctx); err != nil {
		return nil, err
	}
	return h, nil
}

// waitReady returns once the service proxy reaches Heapster's /healthz, which passes after its
// first scrape.
func (h *Heapster) waitReady(ctx context.Context) error {
	h.c.mu.Lock()
	p := h.proc
	h.c.mu.Unlock()
	path := fmt.Sprintf("/api/v1/namespaces/%s/services/http:%s:/proxy/healthz", metav1.NamespaceSystem, h.service)
	return p.waitReady(ctx, 90*time.Second, func(ctx context.Context) error {
		return h.c.client.CoreV1().RESTClient().Get().AbsPath(path).Do(ctx).Error()
	})
}

// restartHeapsters restarts the running real Heapsters once a stopped API server is back:
// Heapster 1.6 (client-go of 2018) does not resume watching pods after the API server
// restarts (seen here: no pod created afterwards ever appeared in its answers), and the
// liveness probe of its manifests checks only that it still scrapes nodes, so in a cluster it
// would go on serving a stale pod list as well.
func (c *Cluster) restartHeapsters(ctx context.Context) error {
	c.mu.Lock()
	hs := append([]*Heapster(nil), c.heapsters...)
	c.mu.Unlock()
	for _, h := range hs {
		c.mu.Lock()
		old := h.proc
		c.mu.Unlock()
		if old.exited() {
			continue // stopped by a test
		}
		if err := h.Stop(); err != nil {
			return err
		}
		p, err := startProcess(h.service, old.bin, h.args, c.logDir)
		if err != nil {
			return err
		}
		c.mu.Lock()
		h.proc = p
		c.mu.Unlock()
		if err := h.waitReady(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Service is the name of the Heapster's Service in kube-system.
func (h *Heapster) Service() string { return h.service }

// Stop stops the Heapster process; its Service and endpoint stay, so the service proxy answers
// 503 as it does for a crashed pod.
func (h *Heapster) Stop() error {
	return h.c.stopComponent(&h.proc, "heapster "+h.service, stopGrace)
}

// RemoveEndpoints deletes the Service's EndpointSlice (Heapster keeps running): the service
// proxy then has no endpoint to send a request to. It returns once the proxy says so: the API
// server reads EndpointSlices from a cache, which may still hold the deleted one for a moment.
func (h *Heapster) RemoveEndpoints(ctx context.Context) error {
	err := h.c.client.DiscoveryV1().EndpointSlices(metav1.NamespaceSystem).Delete(ctx, h.service+"-e2e", metav1.DeleteOptions{})
	if err != nil {
		return fmt.Errorf("heapster %s: deleting its endpointslice: %w", h.service, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		// The proxy's answer is in the body; the error says only 503.
		body, err := h.c.client.CoreV1().Services(metav1.NamespaceSystem).ProxyGet("http", h.service, "", "/healthz", nil).DoRaw(ctx)
		if err != nil && strings.Contains(string(body), "no endpoints available") {
			return nil
		}
		select {
		case <-ctx.Done():
			answer := "success"
			if err != nil {
				answer = err.Error() + ": " + string(body)
			}
			return fmt.Errorf("heapster %s: the service proxy still reaches it 30s after its endpointslice was deleted (its last answer: %s)", h.service, answer)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// bindHeapster gives heapsterUser what Heapster reads: the API server's bootstrap role
// system:heapster (events, pods, nodes, namespaces, deployments) and nodes/stats.
func (c *Cluster) bindHeapster(ctx context.Context) error {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e:heapster-kubelet"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes/stats"}, Verbs: []string{"get"}}},
	}
	if _, err := c.client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("cluster: creating ClusterRole %s: %w", role.Name, err)
	}
	for name, roleName := range map[string]string{"e2e:heapster": "system:heapster", "e2e:heapster-kubelet": role.Name} {
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roleName},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: heapsterUser}},
		}
		if _, err := c.client.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("cluster: binding %s to %s: %w", heapsterUser, roleName, err)
		}
	}
	return nil
}
