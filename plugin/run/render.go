package run

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/kubectl-hpa/kubectl-hpa/controller"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

// renderer shows what the loop decides: a live table on a terminal, one line per
// decision otherwise, or one Explanation object per decision with -o json.
type renderer struct {
	out           io.Writer
	errOut        io.Writer
	mode          string // "table", "lines" or "json"
	metricsSource string
	refresh       time.Duration

	// termRows is the terminal's height (0 when unknown): a frame taller than the screen
	// could not be redrawn in place.
	termRows func() int

	mu    sync.Mutex
	rows  map[string]*row
	dirty chan struct{}
	drawn int // lines of the frame on screen, which the next frame draws over
	// lastNote is the latest note, shown under the table's title.
	lastNote string
}

// row is the table's state for one HPA.
type row struct {
	last  output.Sync
	trace []int32 // desired replicas of recent decisions, oldest first
}

// traceLen is how many decisions the replicas-over-time trace shows.
const traceLen = 20

// newRenderer renders to o's streams; onClosed is called once if the reader of the output
// has gone.
func newRenderer(o *Options, metricsSource string, onClosed func()) *renderer {
	out := &closedOutput{w: o.Out, onClosed: func() {
		if o.ErrOut != nil {
			fmt.Fprintf(o.ErrOut, "kubectl hpa run: %v; stopping as on Ctrl-C\n", errOutputClosed)
		}
		onClosed()
	}}
	r := &renderer{out: out, errOut: o.ErrOut, mode: "lines", metricsSource: metricsSource, refresh: time.Second,
		rows: map[string]*row{}, dirty: make(chan struct{}, 1)}
	switch {
	case o.Output == "json":
		r.mode = "json"
	case o.isTerminal():
		r.mode = "table"
	}
	r.termRows = func() int {
		if f, ok := o.Out.(*os.File); ok {
			if _, h, err := term.GetSize(int(f.Fd())); err == nil {
				return h
			}
		}
		return 0
	}
	return r
}

// note shows a line about run itself rather than one decision (the HPAs watched, the
// Lease): among the decisions in lines mode, under the title of the table, and on stderr
// with -o json, whose stdout stays one Explanation per line.
func (r *renderer) note(now time.Time, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch r.mode {
	case "lines":
		fmt.Fprintf(r.out, "%s %s\n", now.UTC().Format(time.RFC3339), msg)
	case "json":
		if r.errOut != nil {
			fmt.Fprintf(r.errOut, "kubectl hpa run: %s\n", msg)
		}
	case "table":
		r.lastNote = msg
		select {
		case r.dirty <- struct{}{}:
		default:
		}
	}
}

// report is the controller's sink; it is called from worker goroutines.
func (r *renderer) report(rep controller.Report) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch r.mode {
	case "json":
		r.writeJSON(syncOf(rep))
	case "lines":
		fmt.Fprintln(r.out, syncOf(rep).Line())
	case "table":
		e := r.rows[rep.Key]
		if e == nil {
			e = &row{}
			r.rows[rep.Key] = e
		}
		e.last = syncOf(rep)
		// A target whose scale could not be read has no replica count to plot.
		if rep.Decision.Phase != replicas.PhaseScaleFailed {
			e.trace = append(e.trace, rep.Decision.DesiredReplicas)
		}
		if len(e.trace) > traceLen {
			e.trace = e.trace[len(e.trace)-traceLen:]
		}
		select {
		case r.dirty <- struct{}{}:
		default:
		}
	}
}

// start redraws the table in place until ctx ends (a no-op for the other modes): the output
// above it (what was printed before run, such as the demo's explain and its commands) stays
// on screen and the scrollback does not fill with frames. The returned function waits for the
// last redraw and leaves the final table, with the time run stopped, on the screen.
func (r *renderer) start(ctx context.Context) func() {
	if r.mode != "table" {
		return func() {}
	}
	// Hide the cursor while frames are drawn; the final frame shows it again.
	fmt.Fprint(r.out, "\x1b[?25l")
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(r.refresh)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-r.dirty:
			case <-tick.C:
			}
			r.mu.Lock()
			r.redraw(time.Now())
			r.mu.Unlock()
		}
	}()
	return func() {
		<-done
		r.mu.Lock()
		defer r.mu.Unlock()
		r.finish(time.Now())
	}
}

// finish leaves the table on screen when run stops. The last frame stays where it is, since
// a line logged under it at the stop must not be drawn over; decisions that came after it
// (a write finished during the stop) get a fresh frame below; then the time run stopped.
func (r *renderer) finish(now time.Time) {
	select {
	case <-r.dirty:
		r.drawn = 0
		r.redraw(now)
	default:
	}
	fmt.Fprintf(r.out, "\nkubectl hpa run stopped at %s; the table above shows each HPA's last decision\n\x1b[?25h", now.UTC().Format(time.RFC3339))
}

// redraw draws the table over the previous frame. Lines do not wrap (autowrap is off while
// drawing), so a frame takes exactly one screen row per line and the next one can move back
// to its first line; a frame is cut to the screen's height for the same reason. The caller
// holds mu.
func (r *renderer) redraw(now time.Time) {
	var table bytes.Buffer
	r.writeTable(&table, now)
	lines := strings.Split(strings.TrimSuffix(table.String(), "\n"), "\n")
	if h := r.termRows(); h > 2 && len(lines) > h-1 {
		hidden := len(lines) - (h - 2)
		lines = append(lines[:h-2], fmt.Sprintf("... %d more lines (a taller terminal shows them)", hidden))
	}
	var b strings.Builder
	if r.drawn > 0 {
		fmt.Fprintf(&b, "\r\x1b[%dA", r.drawn)
	}
	// Clear from here to the end of the screen, then draw without autowrap.
	b.WriteString("\x1b[J\x1b[?7l")
	for _, l := range lines {
		b.WriteString(l)
		b.WriteString("\n")
	}
	b.WriteString("\x1b[?7h")
	_, _ = io.WriteString(r.out, b.String())
	r.drawn = len(lines)
}

func (r *renderer) writeJSON(s output.Sync) {
	e := s.Explanation(r.metricsSource)
	data, err := json.Marshal(e)
	if err != nil {
		fmt.Fprintf(r.out, "{\"error\":%q}\n", err.Error())
		return
	}
	fmt.Fprintln(r.out, string(data))
}

func (r *renderer) writeTable(w io.Writer, now time.Time) {
	keys := slices.Sorted(maps.Keys(r.rows))
	fmt.Fprintf(w, "kubectl hpa run  %s  metrics: %s\n", now.UTC().Format(time.RFC3339), r.metricsSource)
	if r.lastNote != "" {
		fmt.Fprintln(w, r.lastNote)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HPA\tTARGET\tREPLICAS\tMETRICS (current/target)\tLAST DECISION\tAGE\tTRACE")
	for _, k := range keys {
		e := r.rows[k]
		rep := e.last
		d := rep.Decision
		last := rep.Action()
		if rep.DryRunReason != "" {
			last += " [dry-run]"
		}
		if rep.Err != nil {
			last += " [error]"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k, output.ScaleTarget(rep.Input.HPA), output.ReplicaCounts(d, " -> "),
			rep.Metrics(), last, now.Sub(rep.Input.Now).Round(time.Second), sparkline(e.trace))
	}
	_ = tw.Flush()
}

// sparkline draws replica counts as block characters scaled to their maximum.
func sparkline(vals []int32) string {
	const bars = "▁▂▃▄▅▆▇█"
	levels := []rune(bars)
	var hi int32
	for _, v := range vals {
		hi = max(hi, v)
	}
	var b strings.Builder
	for _, v := range vals {
		i := 0
		if hi > 0 {
			i = int(v) * (len(levels) - 1) / int(hi)
		}
		b.WriteRune(levels[i])
	}
	return b.String()
}

// syncOf is what run prints of one reconcile.
func syncOf(rep controller.Report) output.Sync {
	return output.Sync{Key: rep.Key, Input: rep.Input, Decision: rep.Decision, DryRunReason: rep.DryRunReason, Err: rep.Err}
}
