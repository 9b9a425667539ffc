package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// PodIPAnnotation pins the IP the node stand-in reports for a pod, for pods that front a
// server of the harness (the Heapster stand-in's pod must carry the address it listens on).
const PodIPAnnotation = "e2e.kubectl-hpa.io/pod-ip"

// nodeStandIn plays the kubelet (and the scheduler) for a few Node objects: it binds unscheduled
// pods to its nodes round-robin, marks them Running and Ready after readyDelay, finishes the
// deletion of terminating pods, and serves each node's /metrics/resource (for metrics-server)
// and /stats/summary (the Summary API, for Heapster) from the load model.
type nodeStandIn struct {
	client     kubernetes.Interface
	clock      clock.Clock
	load       *LoadModel
	ip         net.IP
	nodes      []string
	ports      []int
	readyDelay time.Duration
	cert       tls.Certificate
	// clientCAs verify client certificates, with which /stats/ and /metrics/cadvisor
	// authenticate (see kubeletAuth).
	clientCAs *x509.CertPool
	auth      *kubeletAuth
	// started is every node's boot time, the Summary API's node startTime.
	started time.Time

	queue   workqueue.TypedRateLimitingInterface[types.NamespacedName]
	lister  corelisters.PodLister
	servers []*http.Server

	mu     sync.Mutex
	nextIP int
	nextNd int
}

func (n *nodeStandIn) start(ctx context.Context) error {
	if err := n.registerNodes(ctx); err != nil {
		return err
	}
	n.started = n.clock.Now().Truncate(time.Second)
	n.auth = &kubeletAuth{client: n.client, clock: n.clock}
	// The lister is set before the servers start: /metrics/cadvisor reads pods from it.
	factory := informers.NewSharedInformerFactory(n.client, 0)
	informer := factory.Core().V1().Pods().Informer()
	n.lister = factory.Core().V1().Pods().Lister()
	for i, node := range n.nodes {
		addr := net.JoinHostPort(n.ip.String(), strconv.Itoa(n.ports[i]))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("node stand-in %s: listening on %s: %w", node, addr, err)
		}
		srv := &http.Server{
			Handler: n.kubeletHandler(node),
			TLSConfig: &tls.Config{
				Certificates: []tls.Certificate{n.cert}, MinVersion: tls.VersionTLS12,
				// metrics-server's scrapes of /metrics/resource need no certificate here;
				// /stats/ and /metrics/cadvisor want a verified one or a bearer token.
				ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: n.clientCAs,
			},
			ReadHeaderTimeout: 10 * time.Second,
		}
		n.servers = append(n.servers, srv)
		go func() { _ = srv.ServeTLS(l, "", "") }()
	}

	n.queue = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName]())
	enqueue := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if pod, ok := obj.(*corev1.Pod); ok {
			n.queue.Add(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	}); err != nil {
		return fmt.Errorf("node stand-in: watching pods: %w", err)
	}
	factory.Start(ctx.Done())
	syncCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), informer.HasSynced) {
		return errors.New("node stand-in: pod informer did not sync within 30s")
	}
	// Each step of a pod is one API request; the soak test starts 10,000 pods at once.
	const workers = 16
	for range workers {
		go wait.UntilWithContext(ctx, n.work, time.Second)
	}
	go func() {
		<-ctx.Done()
		n.queue.ShutDown()
	}()
	return nil
}

func (n *nodeStandIn) stop() {
	for _, s := range n.servers {
		_ = s.Close()
	}
}

func (n *nodeStandIn) registerNodes(ctx context.Context) error {
	for i, name := range n.nodes {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
		created, err := n.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			created, err = n.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		}
		if err != nil {
			return fmt.Errorf("node stand-in: creating node %s: %w", name, err)
		}
		now := metav1.NewTime(n.clock.Now())
		capacity := corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("16"),
			corev1.ResourceMemory: resource.MustParse("64Gi"),
			// Nothing enforces it (the stand-in binds every pod), but a node must not look full
			// with the soak test's 10,000 pods on it.
			corev1.ResourcePods: resource.MustParse("20000"),
		}
		created.Status = corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity,
			Phase:       corev1.NodeRunning,
			Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				Message: "node stand-in of the e2e harness", LastHeartbeatTime: now, LastTransitionTime: now,
			}},
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: n.ip.String()},
				{Type: corev1.NodeHostName, Address: name},
			},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(n.ports[i])}},
		}
		if _, err := n.client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("node stand-in: setting status of node %s: %w", name, err)
		}
	}
	return nil
}

func (n *nodeStandIn) work(ctx context.Context) {
	for {
		key, quit := n.queue.Get()
		if quit {
			return
		}
		after, err := n.sync(ctx, key)
		switch {
		case err != nil:
			n.queue.AddRateLimited(key)
		case after > 0:
			n.queue.Forget(key)
			n.queue.AddAfter(key, after)
		default:
			n.queue.Forget(key)
		}
		n.queue.Done(key)
	}
}

// sync moves one pod one step along its life; a positive duration asks to be called again then.
func (n *nodeStandIn) sync(ctx context.Context, key types.NamespacedName) (time.Duration, error) {
	pod, err := n.lister.Pods(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		n.load.PodGone(key)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if pod.DeletionTimestamp != nil {
		// The kubelet confirms a pod's end by deleting it with no grace; without that a pod
		// scaled away would stay Terminating forever.
		n.load.PodGone(key)
		zero := int64(0)
		err := n.client.CoreV1().Pods(key.Namespace).Delete(ctx, key.Name, metav1.DeleteOptions{
			GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &pod.UID},
		})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return 0, nil
		}
		return 0, err
	}
	if pod.Spec.NodeName == "" {
		return 0, n.bind(ctx, pod)
	}
	if !n.ownsNode(pod.Spec.NodeName) {
		return 0, nil
	}
	if pod.Status.Phase == corev1.PodRunning {
		start := pod.CreationTimestamp.Time
		if pod.Status.StartTime != nil {
			start = pod.Status.StartTime.Time
		}
		names := make([]string, 0, len(pod.Spec.Containers))
		for _, c := range pod.Spec.Containers {
			names = append(names, c.Name)
		}
		n.load.PodRunning(key, pod.Spec.NodeName, names, pod.Labels, start, podReady(pod))
		return 0, nil
	}
	if pod.Status.Phase != corev1.PodPending {
		n.load.PodGone(key)
		return 0, nil
	}
	if wait := pod.CreationTimestamp.Add(n.readyDelay).Sub(n.clock.Now()); wait > 0 {
		return wait, nil
	}
	return 0, n.markRunning(ctx, pod.DeepCopy())
}

func (n *nodeStandIn) bind(ctx context.Context, pod *corev1.Pod) error {
	n.mu.Lock()
	node := n.nodes[n.nextNd%len(n.nodes)]
	n.nextNd++
	n.mu.Unlock()
	err := n.client.CoreV1().Pods(pod.Namespace).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}, metav1.CreateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil // bound meanwhile or gone: the next event says which
	}
	if err != nil {
		return fmt.Errorf("node stand-in: binding pod %s/%s to %s: %w", pod.Namespace, pod.Name, node, err)
	}
	return nil
}

// markRunning writes the Running status onto pod, the informer's copy; only after a conflict
// does it read the pod again (one request per pod, not two, when thousands start at once).
func (n *nodeStandIn) markRunning(ctx context.Context, pod *corev1.Pod) error {
	first := true
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			fresh, err := n.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			pod = fresh
		}
		first = false
		now := metav1.NewTime(n.clock.Now().Truncate(time.Second))
		ip := pod.Annotations[PodIPAnnotation]
		if ip == "" {
			ip = n.allocateIP()
		}
		st := &pod.Status
		st.Phase = corev1.PodRunning
		st.HostIP, st.HostIPs = n.ip.String(), []corev1.HostIP{{IP: n.ip.String()}}
		st.PodIP, st.PodIPs = ip, []corev1.PodIP{{IP: ip}}
		st.StartTime = &now
		st.Conditions = nil
		for _, c := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
			st.Conditions = append(st.Conditions, corev1.PodCondition{Type: c, Status: corev1.ConditionTrue, LastTransitionTime: now})
		}
		st.ContainerStatuses = nil
		for _, c := range pod.Spec.Containers {
			started := true
			st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
				Name: c.Name, Image: c.Image, ImageID: "e2e://" + c.Image, ContainerID: "containerd://" + containerID(string(pod.UID), c.Name),
				Ready: true, Started: &started,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
			})
		}
		_, err := n.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		return err
	})
}

// allocateIP hands out 10.200.1.1, 10.200.1.2, ... style addresses next to the node's own; nothing
// dials them, they only make the pods look scheduled.
func (n *nodeStandIn) allocateIP() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.nextIP++
	ip := n.ip.To4()
	return net.IPv4(ip[0], ip[1], byte(1+n.nextIP/250), byte(1+n.nextIP%250)).String()
}

func (n *nodeStandIn) ownsNode(name string) bool {
	for _, nd := range n.nodes {
		if nd == name {
			return true
		}
	}
	return false
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// kubeletHandler serves what metrics-server scrapes from a kubelet, /metrics/resource in the
// Prometheus text format with every value stamped with the scrape time; what a cluster's
// Prometheus scrapes, /metrics/cadvisor, to clients allowed nodes/metrics; and what Heapster's
// summary source reads, /stats/summary/ (the path it asks for) and /stats/summary, to clients
// allowed nodes/stats.
func (n *nodeStandIn) kubeletHandler(node string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics/resource", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		pods, cpu, mem, at := n.load.Scrape(node)
		_, _ = w.Write(renderResourceMetrics(pods, cpu, mem, at))
	})
	mux.Handle("/metrics/cadvisor", n.auth.wrap(node, "metrics", n.serveCadvisor(node)))
	summary := n.auth.wrap(node, "stats", n.serveSummary(node))
	mux.Handle("/stats/summary", summary)
	mux.Handle("/stats/summary/", summary)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	return mux
}

// serveCadvisor renders node's /metrics/cadvisor from the load model at the request's instant,
// with each pod's UID, QoS class and images from the pod informer. It samples without
// recording a scrape: LastScrape stays metrics-server's.
func (n *nodeStandIn) serveCadvisor(node string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		at := n.clock.Now().Truncate(time.Millisecond)
		samples, cpu, mem := n.load.SampleNodeAt(node, at)
		pods := make([]cadvisorPod, 0, len(samples))
		for _, s := range samples {
			p := cadvisorPod{PodSample: s, Images: map[string]string{}}
			if pod, err := n.lister.Pods(s.Namespace).Get(s.Name); err == nil {
				p.UID, p.QOSClass = string(pod.UID), pod.Status.QOSClass
				for _, c := range pod.Spec.Containers {
					p.Images[c.Name] = c.Image
				}
			}
			pods = append(pods, p)
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write(renderCadvisorMetrics(pods, cpu, mem, at))
	})
}
