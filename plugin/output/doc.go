// Package output builds and renders what kubectl hpa reports, in the kinds of
// plugin/api/v1alpha1: an Explanation from what was read and decided (Facts, build.go), its
// verdict in words (verdict.go), the findings of a decision and their one text form
// (findings.go), run's one line per sync (sync.go), the formatters the commands share (a
// metric's short name, targets, current values, quantities: format.go), the text renderers
// (text.go for an Explanation, simulation_text.go, timeline_text.go; Table, the one table of
// every text output, in text.go) and the YAML printer of -o yaml (yaml.go).
package output
