// Package output builds what kubectl hpa reports, in the kinds of plugin/api/v1alpha1, and
// holds the drawing every text output shares: an Explanation from what was read and decided
// (Facts, build.go), its verdict in words (verdict.go), the findings of a decision and their
// one text form (findings.go), run's one line per sync (sync.go), the formatters the commands
// share (a metric's short name, targets, current values, quantities: format.go), the one
// table and the durations of every text output (draw.go), a simulation variant's chart
// (chart.go) and the YAML printer of -o yaml (yaml.go). Each command renders its own kind as
// text beside it: explain's, simulate's and timeline's text.go.
package output
