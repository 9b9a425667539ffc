// Package explain is "kubectl hpa explain NAME": one HPA's decision from live metrics with
// every step shown and nothing written, on the history known of it (the run annotation, its
// rescale events, or with --prometheus-url a replay of its past); with --set-target and
// --assume, the same decision on a changed target or current value; with --watch, one
// decision per sync period.
package explain
