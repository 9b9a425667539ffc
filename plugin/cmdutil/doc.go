// Package cmdutil is what the commands of kubectl hpa share, as kubectl's cmd/util is: exit
// codes and error kinds (ExitError, usage errors, API errors mapped to codes), the flags
// several commands take (the controller's settings, the metrics source, Prometheus), cluster
// access (the REST config, the API server check, the clients explain and simulate read
// through, a serialized discovery cache), RBAC permissions, the HPA NAME argument and its
// completion, the METRIC=VALUE what-ifs explain and simulate apply to an HPA, the cluster's
// objects lint reads (lintobjects.go), the --watch loop and its frames (watch.go), and -o's
// printers (printer.go).
package cmdutil
