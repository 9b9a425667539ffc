// Package evaluation is the one path on which every command decides: explain, simulate, the
// re-run of a recording and the loop all read an HPA and what it depends on through a Source
// (its readers of HPAs, scales, pods, metrics and history), then Evaluate it in three steps:
// Read (the HPA and the history known of it), Gather (scale, pods, metrics, in the core's
// Input) and Decide (the pure core). A command that changes the HPA or the input between the
// steps (explain's what-ifs) calls them itself.
//
// It compiles none of client-go, so the simulator and the re-run build without informers or
// work queues; the live source is the subpackage live, the loop's is in package controller.
package evaluation
