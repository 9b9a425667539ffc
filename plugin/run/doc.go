// Package run is "kubectl hpa run": the HPA control loop (package controller) in the
// foreground or in-cluster, with its preflight (API server, permissions, other controllers),
// leader election, the metrics endpoint, what it prints per decision (lines, a table or JSON
// Explanations) and its --record file.
package run
