// Package top is "kubectl hpa top": list's rows of the fleet, live, in a full-screen terminal
// UI (Bubble Tea). Every figure on screen is list's, decided through the one evaluation path:
// the feed (feed.go) asks list for a pass every sync period and as soon as an HPA's spec
// changes (an HPA informer watches them), and the model (model.go, pure: messages in, frames
// out) sorts, filters and marks what changed; Enter opens one HPA as explain renders it. It
// only reads.
package top
