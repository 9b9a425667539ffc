// Package completion is "kubectl hpa completion SHELL": the shell completion script of the
// kubectl-hpa binary. (Completing an HPA NAME is cmdutil.CompleteHPANames.)
package completion
