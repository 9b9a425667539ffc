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

// servedGroups lists what discovery shows: group name -> served versions.
func servedGroups(ctx context.Context, d discovery.DiscoveryInterface) (map[string][]string, error) {
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

// versionResolver finds, and remembers until told otherwise, which version of one metrics
// API group to use. It implements the custom metrics client's AvailableAPIsGetter: unlike
// upstream's, it prefers v1beta2 whenever the group serves it (not the server's preferred
// version); both versions carry the same values.
type versionResolver struct {
	discovery discovery.DiscoveryInterface
	group     string
	prefs     []string

	mu     sync.Mutex
	chosen string
}

func newVersionResolver(d discovery.DiscoveryInterface, group string, prefs []string, known string) *versionResolver {
	return &versionResolver{discovery: d, group: group, prefs: prefs, chosen: known}
}

// version returns the version to use, asking discovery if none is known. A group that
// is not served is not remembered, so a later call notices an adapter installed meanwhile.
func (r *versionResolver) version(ctx context.Context) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.chosen != "" {
		return r.chosen, nil
	}
	served, err := servedGroups(ctx, r.discovery)
	if err != nil {
		return "", fmt.Errorf("discovering %s: %w", r.group, err)
	}
	v, ok := pickVersion(served, r.group, r.prefs)
	if !ok {
		if v, err = r.unlisted(ctx); err != nil {
			return "", err
		}
	}
	r.chosen = v
	return v, nil
}

// unlisted asks each version of a group that discovery did not list, to tell a group the
// cluster has not registered (404: install something) from one registered but failing
// now, which discovery leaves out while its APIService is unavailable (the aggregator
// answers 503: wait or repair, installing would not help).
func (r *versionResolver) unlisted(ctx context.Context) (string, error) {
	for _, v := range r.prefs {
		gv := r.group + "/" + v
		_, err := callCtx(ctx, func() (*metav1.APIResourceList, error) { return r.discovery.ServerResourcesForGroupVersion(gv) })
		switch {
		case err == nil:
			return v, nil
		case apierrors.IsNotFound(err):
			continue
		default:
			return "", fmt.Errorf("%s is registered but unavailable: %w; check the APIService (kubectl get apiservices) and the server behind it", gv, err)
		}
	}
	return "", fmt.Errorf("%s (%s) is %w", r.group, joinVersions(r.prefs), errNotServed)
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

// Invalidate forgets the version, so the next call asks discovery again.
func (r *versionResolver) Invalidate() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.chosen = ""
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
