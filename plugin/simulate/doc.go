// Package simulate is "kubectl hpa simulate": a load curve (a file, or the past from
// Prometheus) played through the exact controller in virtual time for an HPA and variants of
// it, printed as a table, a chart or a Simulation object, or plotted; and
// --from-recording, the re-run of a run --record file that shows whether every decision is
// run's.
package simulate
