package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// The kubelet's Summary API (/stats/summary, k8s.io/kubelet/pkg/apis/stats/v1alpha1), reduced
// to what Heapster's summary source decodes for the autoscaling metrics: the node, its pods and
// their containers with CPU (usageNanoCores, usageCoreNanoSeconds), memory (workingSetBytes,
// usageBytes) and network, each with its time. The field names are the kubelet's; the types
// are declared here so that the product module does not depend on k8s.io/kubelet for a test.
type summary struct {
	Node summaryNode  `json:"node"`
	Pods []summaryPod `json:"pods"`
}

type summaryNode struct {
	NodeName  string          `json:"nodeName"`
	StartTime metav1.Time     `json:"startTime"`
	CPU       *summaryCPU     `json:"cpu,omitempty"`
	Memory    *summaryMemory  `json:"memory,omitempty"`
	Network   *summaryNetwork `json:"network,omitempty"`
}

type summaryPod struct {
	PodRef struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		UID       string `json:"uid"`
	} `json:"podRef"`
	StartTime  metav1.Time        `json:"startTime"`
	Containers []summaryContainer `json:"containers"`
	CPU        *summaryCPU        `json:"cpu,omitempty"`
	Memory     *summaryMemory     `json:"memory,omitempty"`
	Network    *summaryNetwork    `json:"network,omitempty"`
}

type summaryContainer struct {
	Name      string         `json:"name"`
	StartTime metav1.Time    `json:"startTime"`
	CPU       *summaryCPU    `json:"cpu,omitempty"`
	Memory    *summaryMemory `json:"memory,omitempty"`
}

type summaryCPU struct {
	Time                 metav1.Time `json:"time"`
	UsageNanoCores       *uint64     `json:"usageNanoCores,omitempty"`
	UsageCoreNanoSeconds *uint64     `json:"usageCoreNanoSeconds,omitempty"`
}

type summaryMemory struct {
	Time            metav1.Time `json:"time"`
	UsageBytes      *uint64     `json:"usageBytes,omitempty"`
	WorkingSetBytes *uint64     `json:"workingSetBytes,omitempty"`
}

type summaryNetwork struct {
	Time     metav1.Time `json:"time"`
	Name     string      `json:"name"`
	RxBytes  *uint64     `json:"rxBytes,omitempty"`
	TxBytes  *uint64     `json:"txBytes,omitempty"`
	RxErrors *uint64     `json:"rxErrors,omitempty"`
	TxErrors *uint64     `json:"txErrors,omitempty"`
}

// renderSummary writes one node's Summary at the instant at. The kubelet's JSON carries
// times in whole seconds (metav1.Time) and Heapster divides counter differences by the
// difference of those times, so at must be a whole second for the counters to be those of
// the instant the page names. As on /metrics/resource, the first container of a pod carries
// the pod's usage and further containers the idle floor; a pod's figures are its containers'
// sums.
func renderSummary(node string, nodeStart time.Time, pods []PodSample, nodeCPUSeconds float64, nodeMemoryBytes int64, at time.Time) ([]byte, error) {
	ts := metav1.NewTime(at)
	cpu := func(milli int64, seconds float64) *summaryCPU {
		return &summaryCPU{Time: ts, UsageNanoCores: u64(uint64(milli) * 1e6), UsageCoreNanoSeconds: u64(uint64(math.Round(seconds * 1e9)))}
	}
	mem := func(bytes int64) *summaryMemory {
		return &summaryMemory{Time: ts, UsageBytes: u64(uint64(bytes)), WorkingSetBytes: u64(uint64(bytes))}
	}
	zero := uint64(0)
	network := &summaryNetwork{Time: ts, Name: "eth0", RxBytes: &zero, TxBytes: &zero, RxErrors: &zero, TxErrors: &zero}
	var nodeMilli int64
	s := summary{Pods: make([]summaryPod, 0, len(pods))}
	for _, p := range pods {
		sp := summaryPod{StartTime: metav1.NewTime(p.StartTime), Network: network}
		sp.PodRef.Name, sp.PodRef.Namespace = p.Name, p.Namespace
		var podMilli, podMem int64
		var podSeconds float64
		for i, c := range p.Containers {
			milli, seconds, bytes := p.CPUMilli, p.CPUSeconds, p.MemoryBytes
			if i > 0 {
				milli, seconds, bytes = idleCPUMilli, float64(idleCPUMilli)/1000*at.Sub(p.StartTime).Seconds(), idleMemoryBytes
			}
			podMilli, podSeconds, podMem = podMilli+milli, podSeconds+seconds, podMem+bytes
			sp.Containers = append(sp.Containers, summaryContainer{
				Name: c, StartTime: metav1.NewTime(p.StartTime), CPU: cpu(milli, seconds), Memory: mem(bytes),
			})
		}
		sp.CPU, sp.Memory = cpu(podMilli, podSeconds), mem(podMem)
		nodeMilli += podMilli
		s.Pods = append(s.Pods, sp)
	}
	s.Node = summaryNode{
		NodeName: node, StartTime: metav1.NewTime(nodeStart),
		CPU: cpu(nodeMilli, nodeCPUSeconds), Memory: mem(nodeMemoryBytes), Network: network,
	}
	return json.Marshal(s)
}

func u64(v uint64) *uint64 { return &v }

// serveSummary answers /stats/summary for node. It waits for the next whole second and reads
// the load model at that instant (see renderSummary); a kubelet's page is as old as its last
// housekeeping, so the wait costs nothing Heapster would notice.
func (n *nodeStandIn) serveSummary(node string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		now := n.clock.Now()
		at := now.Truncate(time.Second).Add(time.Second)
		select {
		case <-r.Context().Done():
			return
		case <-n.clock.After(at.Sub(now)):
		}
		pods, cpu, mem := n.load.SampleNodeAt(node, at)
		body, err := renderSummary(node, n.started, pods, cpu, mem, at)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}
}

// kubeletAuth guards a kubelet path the way the kubelet does with x509 client authentication,
// Webhook authentication and Webhook authorization (upstream's kubeadm defaults): the client
// certificate must chain to the cluster CA (checked by the TLS server) or, without one, a
// TokenReview must authenticate the bearer token (a pod's ServiceAccount token, as an
// in-cluster Prometheus sends); then a SubjectAccessReview must allow the user and groups the
// verb on nodes/<subresource> of this node. Results are cached like the kubelet's (tokens 2
// minutes; allowed 5 minutes, denied 30 seconds), so a scrape every few seconds costs one
// review per user and period, not one per scrape.
type kubeletAuth struct {
	client kubernetes.Interface
	clock  clock.PassiveClock

	mu     sync.Mutex
	cache  map[string]authDecision
	tokens map[[sha256.Size]byte]tokenIdentity
}

// tokenIdentity is a TokenReview's answer, cached by the token's hash.
type tokenIdentity struct {
	authenticated bool
	user          string
	groups        []string
	until         time.Time
}

const kubeletAuthTokenTTL = 2 * time.Minute

type authDecision struct {
	allowed bool
	reason  string
	until   time.Time
}

const (
	kubeletAuthAllowedTTL = 5 * time.Minute
	kubeletAuthDeniedTTL  = 30 * time.Second
)

func (a *kubeletAuth) wrap(node, subresource string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, groups, authenticated, err := a.authenticate(r)
		if err != nil {
			http.Error(w, fmt.Sprintf("Authentication error: %v", err), http.StatusInternalServerError)
			return
		}
		if !authenticated {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		verb := "get"
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			verb = "create"
		}
		ok, reason, err := a.allowed(r.Context(), user, groups, verb, node, subresource)
		if err != nil {
			http.Error(w, fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=nodes, subresource=%s): %v", user, verb, subresource, err), http.StatusInternalServerError)
			return
		}
		if !ok {
			msg := fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=nodes, subresource=%s)", user, verb, subresource)
			if reason != "" {
				msg += ": " + reason
			}
			http.Error(w, msg, http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// authenticate names the request's user: its verified client certificate's, else its bearer
// token's as a TokenReview says. Only TLS requests are served, as by the kubelet's port.
func (a *kubeletAuth) authenticate(r *http.Request) (user string, groups []string, ok bool, err error) {
	if r.TLS == nil {
		return "", nil, false, nil
	}
	if len(r.TLS.VerifiedChains) > 0 {
		cert := r.TLS.VerifiedChains[0][0]
		return cert.Subject.CommonName, cert.Subject.Organization, true, nil
	}
	token, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !found || token == "" {
		return "", nil, false, nil
	}
	key := sha256.Sum256([]byte(token))
	now := a.clock.Now()
	a.mu.Lock()
	id, hit := a.tokens[key]
	a.mu.Unlock()
	if !hit || !now.Before(id.until) {
		tr, err := a.client.AuthenticationV1().TokenReviews().Create(r.Context(), &authenticationv1.TokenReview{
			Spec: authenticationv1.TokenReviewSpec{Token: token},
		}, metav1.CreateOptions{})
		if err != nil {
			return "", nil, false, err
		}
		id = tokenIdentity{authenticated: tr.Status.Authenticated, user: tr.Status.User.Username, groups: tr.Status.User.Groups, until: now.Add(kubeletAuthTokenTTL)}
		a.mu.Lock()
		if a.tokens == nil {
			a.tokens = map[[sha256.Size]byte]tokenIdentity{}
		}
		a.tokens[key] = id
		a.mu.Unlock()
	}
	return id.user, id.groups, id.authenticated, nil
}

func (a *kubeletAuth) allowed(ctx context.Context, user string, groups []string, verb, node, subresource string) (bool, string, error) {
	key := strings.Join([]string{user, strings.Join(groups, ","), verb, node, subresource}, "|")
	now := a.clock.Now()
	a.mu.Lock()
	d, hit := a.cache[key]
	a.mu.Unlock()
	if hit && now.Before(d.until) {
		return d.allowed, d.reason, nil
	}
	sar, err := a.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Resource: "nodes", Subresource: subresource, Name: node},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, "", err
	}
	d = authDecision{allowed: sar.Status.Allowed, reason: sar.Status.Reason, until: now.Add(kubeletAuthDeniedTTL)}
	if d.allowed {
		d.until = now.Add(kubeletAuthAllowedTTL)
	}
	a.mu.Lock()
	if a.cache == nil {
		a.cache = map[string]authDecision{}
	}
	a.cache[key] = d
	a.mu.Unlock()
	return d.allowed, d.reason, nil
}
