package cmdutil

import (
	"fmt"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation/live"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
)

// Clients are the API clients explain and simulate read the cluster through.
type Clients struct {
	Kube      kubernetes.Interface
	Scales    evaluation.ScaleReader
	Pods      evaluation.PodReader
	Discovery discovery.DiscoveryInterface
	// Dynamic reads VerticalPodAutoscalers (only when discovery shows the API).
	Dynamic dynamic.Interface
	// Config is the configuration they were built from (API server warnings silenced), for
	// the clients built beside them (metrics).
	Config *rest.Config
	// Host is the API server's address, for messages.
	Host string
}

// NewClients builds live clients from the kubeconfig flags, with the cached discovery
// client and REST mapper kubectl uses so discovery costs nothing after the first run.
func NewClients(flags *genericclioptions.ConfigFlags) (*Clients, error) {
	cfg, err := RESTConfig(flags)
	if err != nil {
		return nil, err
	}
	warnOnce := rest.CopyConfig(cfg)
	warnOnce.WarningHandler = rest.NoWarnings{}
	kube, err := kubernetes.NewForConfig(warnOnce)
	if err != nil {
		return nil, fmt.Errorf("creating the Kubernetes client: %w", err)
	}
	cached, err := flags.ToDiscoveryClient()
	if err != nil {
		return nil, fmt.Errorf("creating the discovery client: %w", err)
	}
	// One discovery client for every reader, the REST mapper's included, built as
	// ConfigFlags.ToRESTMapper builds it but over the serialized cache.
	dc := newSerialDiscovery(cached)
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(dc), dc, nil)
	sg, err := scale.NewForConfig(warnOnce, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(dc))
	if err != nil {
		return nil, fmt.Errorf("creating the scale client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(warnOnce)
	if err != nil {
		return nil, fmt.Errorf("creating the dynamic client: %w", err)
	}
	return &Clients{
		Kube:      kube,
		Scales:    &live.ScaleClient{Scales: sg, Mapper: mapper},
		Pods:      live.Pods{Client: kube},
		Discovery: dc,
		Dynamic:   dyn,
		Config:    warnOnce,
		Host:      cfg.Host,
	}, nil
}
