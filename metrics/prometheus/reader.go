package prometheus

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"regexp"
	"slices"
	"sort"
	"strings"
	"text/template"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
)

// The cAdvisor series every cluster's Prometheus scrapes from the kubelets.
const (
	CPUSeries    = "container_cpu_usage_seconds_total"
	MemorySeries = "container_memory_working_set_bytes"
)

// ErrNoSeries is returned (wrapped) when a query matched no series.
var ErrNoSeries = errors.New("no series")

// Reader reads series from one Prometheus. It is safe for concurrent use.
type Reader struct {
	cfg     Config
	api     promv1.API
	address string
}

// New validates cfg and returns a Reader; it sends nothing yet.
func New(cfg Config) (*Reader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.Enabled() {
		return nil, errors.New("no --prometheus-url given")
	}
	u, _ := cfg.url()
	hc, err := cfg.httpClient()
	if err != nil {
		return nil, err
	}
	client, err := api.NewClient(api.Config{Address: cfg.URL, Client: hc})
	if err != nil {
		return nil, fmt.Errorf("--prometheus-url: %w", err)
	}
	return &Reader{cfg: cfg, api: promv1.NewAPI(client), address: u.Redacted()}, nil
}

// Address is Prometheus' URL as messages show it.
func (r *Reader) Address() string { return r.address }

// Config is the configuration the Reader was built from.
func (r *Reader) Config() Config { return r.cfg }

// Grid is where a range query evaluates: Start, Start+Step, ... up to End.
type Grid struct {
	Start, End time.Time
	Step       time.Duration
}

// Point is a series' value at one grid instant in milli-units, as the metrics APIs' samples
// are read (Quantity.MilliValue: millicores, and bytes times 1000), rounded up as MilliValue
// rounds.
type Point struct {
	Time       time.Time
	MilliValue int64
}

// Series are points by key: the pod's name for per-pod series, the series' labels otherwise.
// Points are in time order; an instant where the series had no value (a gap) has no point.
type Series map[string][]Point

// At returns each key's value at the latest point not after t that is no older than maxAge
// (0: any age): what a reader sampling at t would have had.
func (s Series) At(t time.Time, maxAge time.Duration) map[string]Point {
	out := map[string]Point{}
	for k, pts := range s {
		i := sort.Search(len(pts), func(i int) bool { return pts[i].Time.After(t) })
		if i == 0 {
			continue
		}
		p := pts[i-1]
		if maxAge > 0 && t.Sub(p.Time) > maxAge {
			continue
		}
		out[k] = p
	}
	return out
}

// Pods says whose series to read: exact pod names, and a regular expression for pods that
// no longer exist (a Deployment's "web-[a-z0-9]+-[a-z0-9]+"), in namespace.
type Pods struct {
	Namespace string
	Names     []string
	Pattern   string
}

// TargetPods names the pods of a scale target: the current ones (names), and those a
// controller of its kind would have named, gone since (after a scale-down) or not yet
// listed; a kind whose pods' names follow no pattern has only names.
func TargetPods(namespace, kind, name string, names []string) Pods {
	p := Pods{Namespace: namespace, Names: names}
	n := regexp.QuoteMeta(name)
	switch kind {
	case "Deployment":
		p.Pattern = n + "-[a-z0-9]+-[a-z0-9]+"
	case "StatefulSet":
		p.Pattern = n + "-[0-9]+"
	case "ReplicaSet", "ReplicationController":
		p.Pattern = n + "-[a-z0-9]+"
	}
	return p
}

func (p Pods) regexp() string {
	var alts []string
	names := slices.Clone(p.Names)
	sort.Strings(names)
	for _, n := range names {
		alts = append(alts, regexp.QuoteMeta(n))
	}
	if p.Pattern != "" {
		alts = append(alts, p.Pattern)
	}
	return strings.Join(alts, "|")
}

// matchers are the label matchers of the cAdvisor series of pods' containers (the pod
// cgroup's series has container="", the sandbox's container="POD").
func (r *Reader) matchers(pods Pods, container string) string {
	m := fmt.Sprintf(`namespace=%q,pod=~%q,container!="",container!="POD"`, pods.Namespace, pods.regexp())
	if container != "" {
		m += fmt.Sprintf(`,container=%q`, container)
	}
	if r.cfg.Selector != "" {
		m += "," + r.cfg.Selector
	}
	return m
}

// ResourceQuery is the PromQL of a pod resource metric: CPU as the rate of the usage counter
// over window, memory as the working set, summed over the pod's containers (or container's
// alone), as the metrics API sums a pod's containers.
func (r *Reader) ResourceQuery(pods Pods, res corev1.ResourceName, container string, window time.Duration) (string, error) {
	switch res {
	case corev1.ResourceCPU:
		return fmt.Sprintf("sum by (pod) (rate(%s{%s}[%s]))", CPUSeries, r.matchers(pods, container), model.Duration(window)), nil
	case corev1.ResourceMemory:
		return fmt.Sprintf("sum by (pod) (%s{%s})", MemorySeries, r.matchers(pods, container)), nil
	}
	return "", fmt.Errorf("resource %q has no cAdvisor series (cpu and memory have)", res)
}

// Resource reads a pod resource metric per pod on g (see ResourceQuery).
func (r *Reader) Resource(ctx context.Context, pods Pods, res corev1.ResourceName, container string, window time.Duration, g Grid) (Series, string, error) {
	q, err := r.ResourceQuery(pods, res, container, window)
	if err != nil {
		return nil, "", err
	}
	s, err := r.Range(ctx, q, g, "pod")
	return s, q, err
}

// Vars are what a --prometheus-query template can use.
type Vars struct {
	// Namespace is the HPA's namespace.
	Namespace string
	// Pods is a regular expression of the pods' names (for pod=~"{{.Pods}}").
	Pods string
	// Object is an Object metric's described object's name.
	Object string
	// Window is the rate window as PromQL writes it ("30s").
	Window string
	// Selector is --prometheus-selector, with a leading comma when set, to end a matcher list.
	Selector string
}

// NamedQuery renders the --prometheus-query template of metric, if there is one.
func (r *Reader) NamedQuery(metric string, pods Pods, object string, window time.Duration) (string, bool, error) {
	text, ok := r.cfg.Queries[metric]
	if !ok {
		return "", false, nil
	}
	tmpl, err := template.New(metric).Option("missingkey=error").Parse(text)
	if err != nil {
		return "", true, fmt.Errorf("--prometheus-query %s: %w", metric, err)
	}
	v := Vars{Namespace: pods.Namespace, Pods: pods.regexp(), Object: object, Window: model.Duration(window).String()}
	if r.cfg.Selector != "" {
		v.Selector = "," + r.cfg.Selector
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, v); err != nil {
		return "", true, fmt.Errorf("--prometheus-query %s: %w", metric, err)
	}
	return b.String(), true, nil
}

// Range runs query on g and returns its series keyed by the label key (all labels when
// key is empty). Two series with the same key are an error: the query must aggregate.
func (r *Reader) Range(ctx context.Context, query string, g Grid, key string) (Series, error) {
	if g.Step <= 0 || g.End.Before(g.Start) {
		return nil, fmt.Errorf("prometheus: bad grid %s..%s every %s", g.Start, g.End, g.Step)
	}
	v, _, err := r.api.QueryRange(ctx, query, promv1.Range{Start: g.Start, End: g.End, Step: g.Step})
	if err != nil {
		return nil, r.fail(query, err)
	}
	m, ok := v.(model.Matrix)
	if !ok {
		return nil, fmt.Errorf("prometheus at %s: query %s answered a %s, not a matrix", r.address, query, v.Type())
	}
	out := Series{}
	for _, s := range m {
		k := s.Metric.String()
		if key != "" {
			lv, ok := s.Metric[model.LabelName(key)]
			if !ok {
				return nil, fmt.Errorf("prometheus at %s: query %s answered a series without the label %q (%s): aggregate by (%s)", r.address, query, key, s.Metric, key)
			}
			k = string(lv)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("prometheus at %s: query %s answered two series for %s=%q: aggregate by (%s)", r.address, query, key, k, key)
		}
		pts := make([]Point, 0, len(s.Values))
		for _, p := range s.Values {
			f := float64(p.Value)
			if math.IsNaN(f) || math.IsInf(f, 0) {
				continue
			}
			pts = append(pts, Point{Time: p.Timestamp.Time(), MilliValue: milli(f)})
		}
		out[k] = pts
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("prometheus at %s: query %s between %s and %s: %w", r.address, query,
			g.Start.UTC().Format(time.RFC3339), g.End.UTC().Format(time.RFC3339), ErrNoSeries)
	}
	return out, nil
}

// Window is the window CPU usage is averaged over: Config.RateWindow when set, else the
// live samples' window (metrics-server's), else a minute.
func (r *Reader) Window(sampleWindow time.Duration) time.Duration {
	switch {
	case r.cfg.RateWindow > 0:
		return r.cfg.RateWindow
	case sampleWindow >= time.Second:
		return sampleWindow.Round(time.Second)
	}
	return time.Minute
}

func (r *Reader) fail(query string, err error) error {
	// net/http words a client timeout in several ways ("context deadline exceeded", "request
	// canceled (Client.Timeout exceeded ...)"); say it once, with the flag that sets it.
	if timedOut(err) {
		err = fmt.Errorf("no answer within %s (--prometheus-timeout): %w", r.timeout(), err)
	}
	return redact(fmt.Errorf("prometheus at %s: query %s: %w", r.address, query, err), r.cfg.TokenFile)
}

func (r *Reader) timeout() time.Duration {
	if r.cfg.Timeout > 0 {
		return r.cfg.Timeout
	}
	return DefaultTimeout
}

func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// redact keeps the bearer token out of an error (a proxy may echo the request's headers in
// its answer, which client_golang quotes).
func redact(err error, tokenFile string) error {
	if tokenFile == "" {
		return err
	}
	token, terr := readToken(tokenFile)
	if terr != nil || !strings.Contains(err.Error(), token) {
		return err
	}
	return &redactedError{msg: strings.ReplaceAll(err.Error(), token, "<redacted>"), err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// milli is v in milli-units rounded up, as resource.Quantity's MilliValue rounds.
func milli(v float64) int64 {
	return int64(math.Ceil(v*1000 - 1e-9))
}

// CPUAverages reads the pods' CPU usage as the metrics API serves it: at each grid instant,
// the usage counter's increase over the window before it, divided by the window (what
// metrics-server computes from two scrapes of the kubelet's counter). The counter's raw
// samples are read once (a range selector) and interpolated linearly between scrapes, which
// is exact wherever the usage was constant between two scrapes; a counter that went down
// (a restarted container) counts from zero again, as rate() does. A pod's containers are
// summed (only container's when given); a pod none of whose series spans the window at an
// instant has no point there.
func (r *Reader) CPUAverages(ctx context.Context, pods Pods, container string, window time.Duration, g Grid) (Series, string, error) {
	if window <= 0 || g.Step <= 0 || g.End.Before(g.Start) {
		return nil, "", fmt.Errorf("prometheus: bad window %s or grid %s..%s every %s", window, g.Start, g.End, g.Step)
	}
	span := g.End.Sub(g.Start) + window + time.Minute
	q := fmt.Sprintf("%s{%s}[%s]", CPUSeries, r.matchers(pods, container), model.Duration(span.Round(time.Second)))
	v, _, err := r.api.Query(ctx, q, g.End.Add(time.Minute))
	if err != nil {
		return nil, q, r.fail(q, err)
	}
	m, ok := v.(model.Matrix)
	if !ok {
		return nil, q, fmt.Errorf("prometheus at %s: query %s answered a %s, not a matrix", r.address, q, v.Type())
	}
	byPod := map[string][]counter{}
	for _, s := range m {
		pod := string(s.Metric["pod"])
		if pod == "" || len(s.Values) < 2 {
			continue
		}
		byPod[pod] = append(byPod[pod], newCounter(s.Values))
	}
	out := Series{}
	for pod, counters := range byPod {
		var pts []Point
		for t := g.Start; !t.After(g.End); t = t.Add(g.Step) {
			var sum float64
			covered := false
			for _, c := range counters {
				a, okA := c.at(t.Add(-window))
				b, okB := c.at(t)
				if okA && okB {
					sum += b - a
					covered = true
				}
			}
			if covered {
				pts = append(pts, Point{Time: t, MilliValue: milli(sum / window.Seconds())})
			}
		}
		if len(pts) > 0 {
			out[pod] = pts
		}
	}
	if len(out) == 0 {
		return nil, q, fmt.Errorf("prometheus at %s: query %s at %s: %w", r.address, q, g.End.Add(time.Minute).UTC().Format(time.RFC3339), ErrNoSeries)
	}
	return out, q, nil
}

// LastCPUScrape is when Prometheus last scraped the pods' cpu usage counters at or before
// at (within its lookback): the phase of its scrapes, which a reader of the counters can
// align its instants with.
func (r *Reader) LastCPUScrape(ctx context.Context, pods Pods, at time.Time) (time.Time, string, error) {
	q := fmt.Sprintf("max(timestamp(%s{%s}))", CPUSeries, r.matchers(pods, ""))
	v, _, err := r.api.Query(ctx, q, at)
	if err != nil {
		return time.Time{}, q, r.fail(q, err)
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return time.Time{}, q, fmt.Errorf("prometheus at %s: query %s answered a %s, not a vector", r.address, q, v.Type())
	}
	if len(vec) == 0 {
		return time.Time{}, q, fmt.Errorf("prometheus at %s: query %s at %s: %w", r.address, q, at.UTC().Format(time.RFC3339), ErrNoSeries)
	}
	return time.UnixMilli(int64(math.Round(float64(vec[0].Value) * 1000))), q, nil
}

// CPUResets counts the resets of the pods' CPU usage counters (a restarted container
// starts its counter from zero) from g.Start to g.End. rate() and CPUAverages count across
// a reset; what they cannot give is the demand a container did not serve while it was down.
// No series is no reset.
func (r *Reader) CPUResets(ctx context.Context, pods Pods, container string, g Grid) (int, error) {
	q := fmt.Sprintf("sum(resets(%s{%s}[%s]))", CPUSeries, r.matchers(pods, container), model.Duration(g.End.Sub(g.Start).Round(time.Second)))
	v, _, err := r.api.Query(ctx, q, g.End)
	if err != nil {
		return 0, r.fail(q, err)
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return 0, fmt.Errorf("prometheus at %s: query %s answered a %s, not a vector", r.address, q, v.Type())
	}
	if len(vec) == 0 {
		return 0, nil
	}
	return int(vec[0].Value), nil
}

// counter is one series of a counter's raw samples, corrected for resets.
type counter struct {
	ts []time.Time
	vs []float64
}

func newCounter(samples []model.SamplePair) counter {
	c := counter{}
	var offset, prev float64
	for i, s := range samples {
		v := float64(s.Value)
		if i > 0 && v < prev {
			offset += prev
		}
		prev = v
		c.ts = append(c.ts, s.Timestamp.Time())
		c.vs = append(c.vs, v+offset)
	}
	return c
}

// at is the counter at t, interpolated between the samples around it; false outside them.
func (c counter) at(t time.Time) (float64, bool) {
	i := sort.Search(len(c.ts), func(i int) bool { return !c.ts[i].Before(t) })
	switch {
	case i == len(c.ts):
		// After the last scrape: extrapolated for up to two scrape intervals, as the
		// usage most likely stayed what it was (the next scrape is not in yet).
		n := len(c.ts)
		if n < 2 || t.Sub(c.ts[n-1]) > 2*c.ts[n-1].Sub(c.ts[n-2]) {
			return 0, false
		}
		t0, t1 := c.ts[n-2], c.ts[n-1]
		f := float64(t.Sub(t0)) / float64(t1.Sub(t0))
		return c.vs[n-2] + f*(c.vs[n-1]-c.vs[n-2]), true
	case c.ts[i].Equal(t):
		return c.vs[i], true
	case i == 0:
		return 0, false
	}
	t0, t1 := c.ts[i-1], c.ts[i]
	f := float64(t.Sub(t0)) / float64(t1.Sub(t0))
	return c.vs[i-1] + f*(c.vs[i]-c.vs[i-1]), true
}
