// Package version is "kubectl hpa version" and the build's version information: the
// version and commit the Makefile links in (-X), else those the go command stamped, the
// Kubernetes release whose decisions the build reproduces, and the user agent of every
// request the plugin sends.
package version
