package metrics

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// The metrics API groups and the versions kubectl-hpa reads, most preferred first.
const (
	resourceMetricsGroup = "metrics.k8s.io"
	customMetricsGroup   = "custom.metrics.k8s.io"
	externalMetricsGroup = "external.metrics.k8s.io"
)

var (
	resourceMetricsVersions = []string{"v1", "v1beta1"}
	customMetricsVersions   = []string{"v1beta2", "v1beta1"}
	externalMetricsVersions = []string{"v1beta1"}
)

// errNotServed marks a metrics API group the cluster does not serve (in a version we read).
var errNotServed = errors.New("not served by this cluster")

// servedGroups lists what discovery shows, group name -> served versions, for a question
// about group (one of prefs). A cached discovery (kubectl's on-disk cache) may predate the
// group's APIService: when the cached answer lacks the group, the cache is invalidated and
// the server asked, so that absence is the server's word. With trustFresh, an answer the
// cache says it fetched from the server itself (Fresh) is not asked again: that suits a
// command that has just started, not a long run, whose fetches may be hours old. Presence
// may be as old as the cache; a read that then finds the API gone refreshes it
// (versionResolver.forget).
func servedGroups(ctx context.Context, d discovery.DiscoveryInterface, group string, prefs []string, trustFresh bool) (map[string][]string, error) {
	served, err := listGroups(ctx, d)
	if err != nil {
		return nil, err
	}
	if _, ok := pickVersion(served, group, prefs); ok {
		return served, nil
	}
	cached, ok := d.(discovery.CachedDiscoveryInterface)
	if !ok || (trustFresh && cached.Fresh()) {
		return served, nil
	}
	cached.Invalidate()
	return listGroups(ctx, d)
}

func listGroups(ctx context.Context, d discovery.DiscoveryInterface) (map[string][]string, error) {
	groups, err := callCtx(ctx, func() (*metav1.APIGroupList, error) { return d.ServerGroups() })
	if err != nil {
		return nil, err
	}
	out := make(map[string][]string, len(groups.Groups))
	for _, g := range groups.Groups {
		for _, v := range g.Versions {
			out[g.Name] = append(out[g.Name], v.Version)
		}
	}
	return out, nil
}

// pickVersion returns the first of prefs that the group serves.
func pickVersion(served map[string][]string, group string, prefs []string) (string, bool) {
	for _, p := range prefs {
		if slices.Contains(served[group], p) {
			return p, true
		}
	}
	return "", false
}

// discoveryPass is what a client's resolvers share once a command reads in passes
// (DiscoveryPasses): whether it does, and whether this pass has refreshed the cached
// discovery yet.
type discoveryPass struct {
	mu        sync.Mutex
	held      bool
	refreshed bool
}

func (p *discoveryPass) start() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held, p.refreshed = true, false
}

func (p *discoveryPass) isHeld() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// refresh says whether the cached discovery is to be refreshed now: always outside passes,
// once per pass in them.
func (p *discoveryPass) refresh() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.held {
		return true
	}
	first := !p.refreshed
	p.refreshed = true
	return first
}

// versionResolver finds, and remembers until told otherwise, which version of one metrics
// API group to use. It implements the custom metrics client's AvailableAPIsGetter: unlike
// upstream's, it prefers v1beta2 whenever the group serves it (not the server's preferred
// version); both versions carry the same values.
type versionResolver struct {
	discovery discovery.DiscoveryInterface
	group     string
	prefs     []string
	pass      *discoveryPass

	mu     sync.Mutex
	chosen string
	// failed is why no version could be chosen in this pass (only in passes).
	failed error
}

func newVersionResolver(d discovery.DiscoveryInterface, group string, prefs []string, known string, pass *discoveryPass) *versionResolver {
	return &versionResolver{discovery: d, group: group, prefs: prefs, pass: pass, chosen: known}
}

// version returns the version to use, asking discovery if none is known. Outside passes, a
// group that is not served is not remembered, so a later call notices an adapter installed
// meanwhile; in a pass, that answer holds until the next pass, and a cache this process
// fetched is trusted for the group's absence (the versions it does not list are still
// asked of the server, once), so a pass asks discovery once, not once per HPA.
func (r *versionResolver) version(ctx context.Context) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.chosen != "" {
		return r.chosen, nil
	}
	held := r.pass.isHeld()
	if held && r.failed != nil {
		return "", r.failed
	}
	v, err := r.discover(ctx, held)
	if err != nil {
		if held {
			r.failed = err
		}
		return "", err
	}
	r.chosen = v
	return v, nil
}

func (r *versionResolver) discover(ctx context.Context, trustFresh bool) (string, error) {
	served, err := servedGroups(ctx, r.discovery, r.group, r.prefs, trustFresh)
	if err != nil {
		return "", fmt.Errorf("discovering %s: %w", r.group, err)
	}
	if v, ok := pickVersion(served, r.group, r.prefs); ok {
		return v, nil
	}
	return r.unlisted(ctx)
}

// unlisted asks each version of a group that discovery did not list, to tell a group the
// cluster has not registered (404: install something) from one registered but failing
// now, which discovery leaves out while its APIService is unavailable (the aggregator
// answers 503: wait or repair, installing would not help).
func (r *versionResolver) unlisted(ctx context.Context) (string, error) {
	for _, v := range r.prefs {
		gv := r.group + "/" + v
		err := probe(ctx, r.discovery, gv)
		switch {
		case err == nil:
			return v, nil
		case apierrors.IsNotFound(err):
			continue
		default:
			// Worded as apiError words a 503 of a read, which is the same state.
			return "", fmt.Errorf("%w; %s is registered but unavailable: check the APIService (kubectl get apiservices) and the server behind it", err, gv)
		}
	}
	return "", fmt.Errorf("%s (%s) is %w", r.group, joinVersions(r.prefs), errNotServed)
}

// probe asks the server for the resources of gv, which discovery did not list.
func probe(ctx context.Context, d discovery.DiscoveryInterface, gv string) error {
	if _, ok := d.(discovery.CachedDiscoveryInterface); ok {
		// A cache answers only for the versions its group list names ("not found" for the
		// others, without asking), so the server is asked directly.
		return d.RESTClient().Get().AbsPath("/apis", gv).Do(ctx).Error()
	}
	_, err := callCtx(ctx, func() (*metav1.APIResourceList, error) { return d.ServerResourcesForGroupVersion(gv) })
	return err
}

// current is the remembered version, "" if none.
func (r *versionResolver) current() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.chosen
}

// PreferredVersion is for the custom metrics client, which does not pass a context; its
// calls run under callCtx, so discovery ends when the caller gives up.
func (r *versionResolver) PreferredVersion() (schema.GroupVersion, error) {
	v, err := r.version(context.Background())
	if err != nil {
		return schema.GroupVersion{}, err
	}
	return schema.GroupVersion{Group: r.group, Version: v}, nil
}

// Invalidate forgets the version, or why there is none, so the next call asks discovery
// again.
func (r *versionResolver) Invalidate() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.chosen, r.failed = "", nil
}

// dropFailure forgets why no version could be chosen, keeping a version chosen.
func (r *versionResolver) dropFailure() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = nil
}

// forget is Invalidate after the API answered 404: it may be gone. A cached discovery,
// whose answer led to the version, is refreshed now (in a pass, by the first 404 of the
// pass only: an adapter answers 404 for each metric it lacks), so that the next call, and
// the next command reading the same cache on disk, see whether the group is still served.
func (r *versionResolver) forget(ctx context.Context) {
	r.Invalidate()
	cached, ok := r.discovery.(discovery.CachedDiscoveryInterface)
	if !ok || !r.pass.refresh() {
		return
	}
	cached.Invalidate()
	// Only the refresh matters here; a failure shows in the next call's own discovery.
	_, _ = callCtx(ctx, func() (*metav1.APIGroupList, error) { return cached.ServerGroups() })
}

func joinVersions(vs []string) string {
	out := ""
	for i, v := range vs {
		if i > 0 {
			out += " or "
		}
		out += v
	}
	return out
}

// callCtx runs f, which takes no context (the custom and external metrics clients and
// discovery do not), and returns early when ctx ends. f keeps running until its own
// request finishes or the rest.Config timeout fires; its result is then discarded.
func callCtx[T any](ctx context.Context, f func() (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}
