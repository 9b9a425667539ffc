package top

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/go-logr/logr/funcr"
	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"

	"github.com/kubectl-hpa/kubectl-hpa/controller/history/annotation"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/prometheus"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/list"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/simulate"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/timeline"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/tune"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/tune/search"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/validation"
)

const long = `Show the HPAs of a namespace (or of all) live in one screen: list's table, decided again
every --sync-period and as soon as an HPA's spec changes, sorted and filtered as you type, what
changed at the latest pass marked with *. Every figure is list's: the decision the Kubernetes
v1.37 HPA controller would make now.

Enter opens one HPA as explain shows it, under its current and desired replicas over the
session. There, t shows its timeline over --since as kubectl hpa timeline prints it (replayed
from --prometheus-url when given), and w asks what if: a change typed in simulate's --variant
syntax (cpu=60%,max=20), played with the HPA as it is on its last --since of load from
--prometheus-url, as kubectl hpa simulate prints it; u tunes it on that load, as kubectl hpa
tune --from-prometheus prints its recommendation. a on a what-if shows it as a patch of the
HPA's spec, and y writes it: a server dry run, then the patch, both at the resourceVersion
read, refused if anyone changed the spec since. That is top's only write; --read-only hides
it, and every write is printed once the screen is gone.

It needs a terminal; kubectl hpa list -w lists again every sync period without one. Press ?
for the keys, q or Ctrl-C to leave: the terminal is left as it was. What client-go logged while
the screen was up is written to stderr once it is gone.

Exit codes: 0 ok, 1 unexpected failure, 2 bad flags or no terminal, 4 the namespace does not
exist, 7 listing HPAs forbidden by RBAC, 9 unauthorized.`

const example = `  # The HPAs of the namespace shop, live
  kubectl hpa top -n shop

  # Every namespace, the problems only, sorted by the constraint that holds them
  kubectl hpa top -A --problems --sort-by binding`

// Options are the inputs of "kubectl hpa top".
type Options struct {
	// List decides the rows: its flags are top's, and it reads as list -w does.
	List *list.Options
	genericiooptions.IOStreams

	// Since is how far back an HPA's timeline goes (t); Prometheus, when its URL is set,
	// replays it (timeline --prometheus-url).
	Since      time.Duration
	Prometheus prometheus.Config
	// ReadOnly hides every write: no what-if becomes a patch.
	ReadOnly bool

	// given are the controller's flags given on the command line: a what-if's model says they
	// are the cluster's, not upstream's defaults.
	given []string
	// writes are what top wrote, a line each, printed once the screen is gone; writing counts
	// the writes under way, which the exit waits for.
	writesMu sync.Mutex
	writes   []string
	writing  sync.WaitGroup

	// isTerminal says whether In and Out are a terminal.
	isTerminal func() bool
	// programOptions are the program's extra options; tests set the window size.
	programOptions []tea.ProgramOption
}

// NewOptions returns options with kube-controller-manager's defaults.
func NewOptions(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *Options {
	return &Options{
		List:       list.NewOptions(configFlags, streams),
		IOStreams:  streams,
		Since:      time.Hour,
		Prometheus: prometheus.Config{Timeout: prometheus.DefaultTimeout},
		isTerminal: func() bool {
			return cmdutil.IsTerminal(streams.Out) && cmdutil.IsTerminalReader(streams.In)
		},
	}
}

// NewCmdTop builds "kubectl hpa top".
func NewCmdTop(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmd(NewOptions(configFlags, streams))
}

func newCmd(o *Options) *cobra.Command {
	l := o.List
	cmd := &cobra.Command{
		Use:                   "top [-n NAMESPACE | -A] [-l SELECTOR]",
		DisableFlagsInUseLine: true,
		Short:                 "Show the fleet's HPAs live in one screen, and open one to see why",
		Long:                  long,
		Example:               example,
		Args:                  cmdutil.NoArgs(": choose the namespace with -n or -A, and filter with / once it shows"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(cmd, args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	fs := cmd.Flags()
	fs.BoolVarP(&l.AllNamespaces, "all-namespaces", "A", l.AllNamespaces, "Show the HPAs of every namespace")
	fs.StringVarP(&l.Selector, "selector", "l", l.Selector, "Label selector of the HPAs to show (=, ==, !=, in, notin, exists), e.g. -l team=shop")
	fs.BoolVar(&l.ProblemsOnly, "problems", l.ProblemsOnly, "Start with the HPAs with a problem only (p switches)")
	fs.StringVar(&l.SortBy, "sort-by", l.SortBy, "Start sorted by a column (s switches): "+strings.Join(list.SortColumns(), ", ")+" (default: namespace, then name)")
	fs.DurationVar(&l.SyncPeriod, "sync-period", l.SyncPeriod, "The cluster's sync period (kube-controller-manager --horizontal-pod-autoscaler-sync-period): how often to decide again, since a decision changes at most once a period")
	fs.BoolVar(&o.ReadOnly, "read-only", o.ReadOnly, "Hide every write: a what-if cannot be applied (a on its screen)")
	fs.DurationVar(&o.Since, "since", o.Since, "How far back an HPA's timeline goes (t on its screen: kubectl hpa timeline --since)")
	cmdutil.AddControllerConfigFlags(fs, &l.Config, "The cluster's")
	cmdutil.AddMetricsFlags(fs, &l.Metrics)
	cmdutil.AddPrometheusFlags(fs, &o.Prometheus, prometheusUsage)
	cmdutil.WithUsageExitCodes(cmd)
	return cmd
}

// Complete fills list's options: it lists again, as list -w does.
func (o *Options) Complete(cmd *cobra.Command, args []string) error {
	o.List.Watch = true
	for _, f := range []string{"sync-period", "tolerance", "downscale-stabilization", "cpu-initialization-period", "initial-readiness-delay"} {
		if cmd != nil && cmd.Flags().Changed(f) {
			o.given = append(o.given, f)
		}
	}
	return o.List.Complete(cmd, args)
}

// prometheusUsage is what the --prometheus-* flags do in top: an HPA's timeline replays its
// metrics from them, its what-ifs and tuning play its load from them.
var prometheusUsage = cmdutil.PrometheusUsage{
	URL:        "Where an HPA's past is (base URL, e.g. http://127.0.0.1:9090 after kubectl port-forward): its timeline (t) replays its metrics over --since from it, its what-ifs (w) and tuning (u) play its load over --since from it.",
	RateWindow: "Window CPU usage is averaged over in the timeline's replay and the load of what-ifs and tuning; 0 takes 1m.",
	Query:      `PromQL template of a Pods, Object or External metric, METRIC=QUERY (repeatable), as timeline --prometheus-query.`,
}

// Validate checks the flags, and that there is a terminal to draw on.
func (o *Options) Validate() error {
	if err := o.List.Validate(); err != nil {
		return err
	}
	if o.Since <= 0 {
		return cmdutil.UsageErrorf("--since must be positive, e.g. 1h or 30m, got %s", o.Since)
	}
	if err := o.Prometheus.Validate(); err != nil {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: err}
	}
	if !o.isTerminal() {
		return cmdutil.UsageErrorf("top draws on a terminal, and stdin or stdout is not one: kubectl hpa list -w lists again every sync period without one")
	}
	return nil
}

// Run shows the fleet until the user quits or ctx is done.
func (o *Options) Run(ctx context.Context) error {
	// The screen filters and sorts: list's passes are of every HPA, in namespace and name order.
	sortBy, problemsOnly := list.NormalColumn(o.List.SortBy), o.List.ProblemsOnly
	o.List.SortBy, o.List.ProblemsOnly = "", false
	if err := o.List.Connect(ctx); err != nil {
		return err
	}
	// The first pass fails the command as list fails (the namespace missing, RBAC), before the
	// screen is drawn; later failures show on the screen.
	rows, err := o.List.Rows(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	logs := captureLogs(maxLogLines)
	defer logs.writeTo(o.ErrOut)

	m := newModel(o.scope(), o.List.AllNamespaces, o.List.SyncPeriod, sortBy, problemsOnly, nil)
	m.past, m.whatIf, m.tune, m.since = o.timeline(ctx), o.simulate(ctx), o.tuning(ctx), o.Since
	if !o.ReadOnly {
		m.propose = o.propose(ctx)
	}
	m.now = o.List.Clock.Now()
	m.pass(passMsg{rows: rows, at: m.now})
	p := tea.NewProgram(m, append([]tea.ProgramOption{tea.WithContext(ctx), tea.WithInput(o.In), tea.WithOutput(o.Out)}, o.programOptions...)...)
	f := newFeed(o.List.Rows, o.List.Clock, o.List.SyncPeriod, p.Send)
	m.refresh = f.poke
	var (
		wg      sync.WaitGroup
		crashed error
	)
	// A panic on these goroutines would end the process with the terminal still raw: the
	// program is ended first, which restores it, and the panic becomes the command's error.
	guard := func(run func()) {
		defer func() {
			if r := recover(); r != nil {
				crashed = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
				p.Kill()
			}
		}()
		run()
	}
	wg.Go(func() { guard(func() { f.run(ctx) }) })
	wg.Go(func() { guard(func() { watchSpecs(ctx, o.List.Kube(), o.namespace(), o.List.Selector, f.poke) }) })
	_, err = p.Run()
	cancel()
	wg.Wait()
	// Every write, once the screen is gone, one a quit cut short included: what a person did
	// stays on their terminal.
	o.writing.Wait()
	for _, w := range o.writes {
		fmt.Fprintln(o.Out, w)
	}
	switch {
	case crashed != nil:
		return crashed
	case errors.Is(err, tea.ErrProgramPanic):
		// Bubble Tea restored the terminal and printed the panic.
		return fmt.Errorf("the terminal screen: %w", err)
	case err == nil, errors.Is(err, tea.ErrInterrupted), errors.Is(err, tea.ErrProgramKilled):
		// q, Ctrl-C, SIGINT or SIGTERM: the terminal is restored either way.
		return nil
	}
	return fmt.Errorf("the terminal screen: %w", err)
}

// timeline reads an HPA's timeline as kubectl hpa timeline NAME -n NAMESPACE --since prints
// it, with top's flags (the controller's, Prometheus').
func (o *Options) timeline(ctx context.Context) func(namespace, name string, width int) (string, error) {
	return func(namespace, name string, width int) (string, error) {
		var out, errOut bytes.Buffer
		t := timeline.NewOptions(o.List.ConfigFlags, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		t.Since, t.Width, t.SyncPeriod, t.Config, t.Prometheus = o.Since, width, o.List.SyncPeriod, o.List.Config, o.Prometheus
		if err := t.Complete(nil, []string{name}); err != nil {
			return "", err
		}
		t.Namespace, t.ExplicitNamespace = namespace, true
		if err := t.Validate(); err != nil {
			return "", err
		}
		if err := t.Run(ctx); err != nil {
			return "", err
		}
		// Warnings (a Prometheus that failed, the history used instead) lead, as on a terminal.
		return errOut.String() + out.String(), nil
	}
}

// simulate plays an HPA as it is and with variant (simulate's --variant syntax) on its last
// --since of load from Prometheus, as kubectl hpa simulate NAME -n NAMESPACE --from-prometheus
// --variant edited=VARIANT prints it.
func (o *Options) simulate(ctx context.Context) func(namespace, name, variant string, width int) (string, error) {
	return func(namespace, name, variant string, width int) (string, error) {
		if !o.Prometheus.Enabled() {
			return "", errors.New("a what-if plays the HPA's recent load from Prometheus: start top with --prometheus-url (kubectl hpa simulate --from-prometheus)")
		}
		var out, errOut bytes.Buffer
		s := simulate.NewOptions(o.List.ConfigFlags, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		o.playOn(s)
		s.Width = width
		s.Variants = []string{"edited=" + variant}
		if err := s.Complete(o.givenFlags(), []string{name}); err != nil {
			return "", err
		}
		s.Namespace, s.ExplicitNamespace = namespace, true
		if err := s.Run(ctx); err != nil {
			return "", err
		}
		return errOut.String() + out.String(), nil
	}
}

// tuning tunes an HPA on its last --since of load from Prometheus, as kubectl hpa tune NAME
// -n NAMESPACE --from-prometheus prints it (its defaults: the balanced objective, at most 1% of
// the time above target).
func (o *Options) tuning(ctx context.Context) func(namespace, name string, width int) (string, error) {
	return func(namespace, name string, width int) (string, error) {
		if !o.Prometheus.Enabled() {
			return "", errors.New("tune plays the HPA's recent load from Prometheus: start top with --prometheus-url (kubectl hpa tune --from-prometheus)")
		}
		var out, errOut bytes.Buffer
		t := tune.NewOptions(o.List.ConfigFlags, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		o.playOn(t.Input)
		t.Width = width
		if err := t.Complete(o.givenFlags(), []string{name}); err != nil {
			return "", err
		}
		t.Input.Namespace, t.Input.ExplicitNamespace = namespace, true
		if err := t.Validate(); err != nil {
			return "", err
		}
		if err := t.Run(ctx); err != nil {
			return "", err
		}
		return errOut.String() + out.String(), nil
	}
}

// playOn sets simulate's inputs to an HPA's last --since of load from top's Prometheus, played
// with the cluster's controller as top was told it.
func (o *Options) playOn(s *simulate.Options) {
	rateWindow := s.Prometheus.RateWindow
	s.FromPrometheus, s.Since, s.Prometheus = true, o.Since, o.Prometheus
	if s.Prometheus.RateWindow == 0 {
		s.Prometheus.RateWindow = rateWindow
	}
	s.Model.Controller, s.Model.SyncPeriod = o.List.Config, o.List.SyncPeriod
}

// givenFlags is a command line on which the controller's flags given to top are given:
// simulate and tune ask theirs which model flags were, to say whose each value is.
func (o *Options) givenFlags() *cobra.Command {
	cmd := &cobra.Command{}
	for _, f := range o.given {
		cmd.Flags().String(f, "", "")
		_ = cmd.Flags().Set(f, "given")
	}
	return cmd
}

// propose makes a what-if's variant a patch of the HPA as read now, and what writes it.
func (o *Options) propose(ctx context.Context) func(namespace, name, variant string) (*proposal, error) {
	return func(namespace, name, variant string) (*proposal, error) {
		kube := o.List.Kube()
		read, err := kube.AutoscalingV2().HorizontalPodAutoscalers(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading horizontalpodautoscaler %s/%s: %w", namespace, name, err)
		}
		changed, err := simulate.ApplyVariant(read, "edited", variant, validation.Options{ScaleToZero: o.List.Config.ScaleToZero})
		if err != nil {
			return nil, err
		}
		patch, err := search.MergePatch(read, changed)
		if err != nil {
			return nil, err
		}
		if patch == nil {
			return nil, fmt.Errorf("%s changes nothing of %s/%s's spec as it is now", variant, namespace, name)
		}
		pretty, err := json.MarshalIndent(patch, "", "  ")
		if err != nil {
			return nil, err
		}
		return &proposal{
			key: namespace + "/" + name, variant: variant, resourceVersion: read.ResourceVersion, patch: string(pretty),
			apply: func() (string, error) {
				// A write once begun ends on its own terms, not at a quit: its line must say
				// what happened.
				o.writing.Add(1)
				defer o.writing.Done()
				ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
				defer cancel()
				updated, at, err := cmdutil.PatchSpec(ctx, kube, read, cmdutil.SpecPatch{
					Patch: patch, FieldManager: annotation.FieldManager,
					What: "top", Again: "ask what if again of the HPA as it is now", Doc: "docs/top.md",
				})
				if err != nil {
					return "", err
				}
				compact, _ := json.Marshal(patch)
				line := fmt.Sprintf("Applied %s to %s/%s as field manager %s after a server dry run: resourceVersion %s, now %s; patch %s",
					variant, namespace, name, annotation.FieldManager, at, updated.ResourceVersion, compact)
				o.writesMu.Lock()
				defer o.writesMu.Unlock()
				o.writes = append(o.writes, line)
				return line, nil
			},
		}, nil
	}
}

// scope says what is shown, for the title.
func (o *Options) scope() string {
	s := "namespace " + o.List.Namespace
	if o.List.AllNamespaces {
		s = "every namespace"
	}
	if o.List.Selector != "" {
		s += " · -l " + o.List.Selector
	}
	return s
}

// namespace is the namespace the informer watches: "" for every one.
func (o *Options) namespace() string {
	if o.List.AllNamespaces {
		return ""
	}
	return o.List.Namespace
}

// writeTimeout bounds a write begun before a quit: the dry run, the patch, a re-read after a
// conflict.
const writeTimeout = 10 * time.Second

// maxLogLines bounds what the screen holds back of klog's output: a watch refused again and
// again logs at every retry.
const maxLogLines = 200

// logs holds what klog (client-go's informers and clients) logs while the screen is up, where
// it would draw over the screen, to be written once the screen is gone: the last max lines,
// and how many came before them.
type logs struct {
	mu      sync.Mutex
	max     int
	lines   []string
	dropped int
}

// captureLogs routes klog to the returned logs until writeTo. klog checks -v itself before it
// calls the logger, so the logger takes every level it is given; it keeps the last limit lines.
func captureLogs(limit int) *logs {
	l := &logs{max: limit}
	klog.SetLogger(funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if len(l.lines) == l.max {
			l.lines = l.lines[1:]
			l.dropped++
		}
		l.lines = append(l.lines, strings.TrimSpace(prefix+" "+args))
	}, funcr.Options{Verbosity: math.MaxInt32}))
	return l
}

// writeTo gives klog its own output back and writes what was held.
func (l *logs) writeTo(w io.Writer) {
	klog.ClearLogger()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dropped > 0 {
		fmt.Fprintf(w, "(%d earlier log lines left out)\n", l.dropped)
	}
	for _, line := range l.lines {
		fmt.Fprintln(w, line)
	}
}
