package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

// explainBothSources runs explain on the same load from metrics-server and from the real
// Heapster (through the service proxy of kube-system/heapster), prints both, then the figures
// that matter side by side.
func explainBothSources(ctx context.Context, k cluster.Kubectl, s streams) error {
	sources := []struct{ flag, title string }{
		{"--metrics-source=metrics-api", "metrics-server"},
		{"--metrics-source=heapster", "Heapster"},
	}
	// Heapster's window (60s) is the longer: once it starts after the pods became ready,
	// metrics-server's does too, and both explanations count the same ready pods.
	s.say("waiting for Heapster to sample a full window (60s, it says) since the pods became ready")
	if err := waitHeapsterWindow(ctx, k, s); err != nil {
		return err
	}
	var explained []v1alpha1.Explanation
	for _, src := range sources {
		s.say("$ kubectl hpa explain %s -n %s %s", demoApp, demoNamespace, src.flag)
		out, err := k.Run(ctx, "hpa", "explain", demoApp, "-n", demoNamespace, src.flag)
		if err != nil {
			return fmt.Errorf("explain from %s: %w", src.title, err)
		}
		fmt.Fprint(s.out, out)
		e, err := explainJSON(ctx, k, src.flag)
		if err != nil {
			return err
		}
		explained = append(explained, e)
	}
	s.say("the two explanations side by side:")
	printSideBySide(s.out, explained[0], explained[1])
	return nil
}

func explainJSON(ctx context.Context, k cluster.Kubectl, flags ...string) (v1alpha1.Explanation, error) {
	var e v1alpha1.Explanation
	out, err := k.Run(ctx, append([]string{"hpa", "explain", demoApp, "-n", demoNamespace, "-o", "json"}, flags...)...)
	if err != nil {
		return e, fmt.Errorf("explain -o json %s: %w", strings.Join(flags, " "), err)
	}
	if err := json.Unmarshal([]byte(out), &e); err != nil {
		return e, fmt.Errorf("decoding explain -o json: %w", err)
	}
	return e, nil
}

// waitHeapsterWindow waits until explain from Heapster counts every pod as ready: Heapster
// stamps its samples with a 60s window, and like upstream explain counts a young pod's CPU only
// once that window starts after the pod became ready.
func waitHeapsterWindow(ctx context.Context, k cluster.Kubectl, s streams) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var last string
	defer heartbeat(ctx, s, progressEvery, "for Heapster's window", "of about 60")()
	for {
		e, err := explainJSON(ctx, k, "--metrics-source=heapster")
		switch {
		case err != nil:
			last = err.Error()
		case e.Error != nil:
			last = e.Error.Message
		case len(e.Metrics) > 0 && len(e.Metrics[0].Pods) > 0:
			ready := true
			for _, p := range e.Metrics[0].Pods {
				ready = ready && p.Treatment == "ready"
			}
			if ready {
				return nil
			}
			last = "pods not counted as ready yet"
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("heapster: no full window after readiness (last: %s): %w", last, ctx.Err())
		case <-time.After(5 * time.Second):
		}
	}
}

func printSideBySide(w io.Writer, ms, hs v1alpha1.Explanation) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(label string, f func(v1alpha1.Explanation) string) {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", label, f(ms), f(hs))
	}
	row("", func(e v1alpha1.Explanation) string { return strings.ToUpper(sourceTitle(e)) })
	row("metrics source", func(e v1alpha1.Explanation) string {
		// "metrics from X, ... (why)" -> X
		src := strings.TrimPrefix(e.MetricsSource, "metrics from ")
		src, _, _ = strings.Cut(src, ", ")
		src, _, _ = strings.Cut(src, " (")
		return src
	})
	row("sampled at", func(e v1alpha1.Explanation) string {
		if len(e.Metrics) == 0 || e.Metrics[0].Timestamp == nil {
			return "-"
		}
		return e.Metrics[0].Timestamp.UTC().Format(time.RFC3339)
	})
	row("cpu current / target", func(e v1alpha1.Explanation) string {
		if len(e.Metrics) == 0 {
			return "-"
		}
		return e.Metrics[0].Current + " / " + e.Metrics[0].Target
	})
	row("pod usage", func(e v1alpha1.Explanation) string {
		if len(e.Metrics) == 0 {
			return "-"
		}
		var ps []string
		for _, p := range e.Metrics[0].Pods {
			if p.UsageMilli != nil {
				ps = append(ps, fmt.Sprintf("%dm", *p.UsageMilli))
			}
		}
		return strings.Join(ps, " ")
	})
	row("desired replicas", func(e v1alpha1.Explanation) string {
		if e.Decision == nil {
			return "-"
		}
		return fmt.Sprintf("%d -> %d", e.Decision.CurrentReplicas, e.Decision.DesiredReplicas)
	})
	_ = tw.Flush()
}

func sourceTitle(e v1alpha1.Explanation) string {
	if strings.Contains(e.MetricsSource, "heapster") {
		return "Heapster"
	}
	return "metrics-server"
}
