package cmdutil

import (
	"errors"
	"fmt"
	"io"
	"maps"

	"github.com/spf13/cobra"
)

// Exit codes of kubectl hpa commands. They are part of the CLI contract: scripts and the
// e2e tests rely on them, so existing values never change.
const (
	// ExitOK: the command did what was asked.
	ExitOK = 0
	// ExitFailure: an unexpected failure (network, server error, bug).
	ExitFailure = 1
	// ExitUsage: bad flags or arguments.
	ExitUsage = 2
	// ExitHPANotFound: the named HPA does not exist in the namespace (nor, as far as we may
	// look, in any other).
	ExitHPANotFound = 3
	// ExitWrongNamespace: the namespace does not exist, or the HPA exists in another namespace.
	ExitWrongNamespace = 4
	// ExitTargetNotFound: the HPA's scaleTargetRef names an object that does not exist.
	ExitTargetNotFound = 5
	// ExitTargetNotScalable: the target's kind is unknown or has no scale subresource, or the
	// apiVersion does not parse.
	ExitTargetNotScalable = 6
	// ExitForbidden: RBAC denied a read the command needs (explain), or a permission the
	// command needs is missing (run's check at start).
	ExitForbidden = 7
	// ExitMetricsUnavailable: a metrics API the HPA needs is not served by the cluster.
	ExitMetricsUnavailable = 8
	// ExitUnauthorized: the API server rejected the credentials.
	ExitUnauthorized = 9
	// ExitCannotCompute: the HPA's metrics were read (or there was nothing to read) but no
	// replica count can be computed from them, so the controller sets ScalingActive=False
	// and scales nothing: a Utilization target on pods without requests, an invalid or
	// ambiguous selector, a metric spec the controller refuses.
	ExitCannotCompute = 10
	// ExitLintFindings: lint found at least one finding as severe as --fail-on asks.
	ExitLintFindings = 11
)

// Stable reasons for structured errors (output.Error.Reason), one per exit code.
var exitReasons = map[int]string{
	ExitFailure:            "Failure",
	ExitUsage:              "UsageError",
	ExitHPANotFound:        "HPANotFound",
	ExitWrongNamespace:     "WrongNamespace",
	ExitTargetNotFound:     "TargetNotFound",
	ExitTargetNotScalable:  "TargetNotScalable",
	ExitForbidden:          "Forbidden",
	ExitMetricsUnavailable: "MetricsAPIUnavailable",
	ExitUnauthorized:       "Unauthorized",
	ExitCannotCompute:      "CannotComputeReplicas",
	ExitLintFindings:       "LintFindings",
}

// ExitReason is the stable CamelCase reason for an exit code.
func ExitReason(code int) string {
	if r, ok := exitReasons[code]; ok {
		return r
	}
	return "Failure"
}

// ExitReasons are every failure exit code with its reason (a copy), for the checks that the
// documentation lists them all.
func ExitReasons() map[int]string { return maps.Clone(exitReasons) }

// ExitError carries a process exit code chosen by a command.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode returns the exit code an error carries (ExitFailure when none).
func ExitCode(err error) int {
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return ExitFailure
}

// UsageErrorf is a bad-input error with ExitUsage.
func UsageErrorf(format string, args ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// AlreadyReported is an error the command has printed itself (explain --watch prints each
// failure as it happens and exits with the last one's code).
type AlreadyReported struct{ Err error }

func (a AlreadyReported) Error() string { return a.Err.Error() }
func (a AlreadyReported) Unwrap() error { return a.Err }

// Report prints err as one line on errOut, unless it was printed already, and returns the
// exit code it carries.
func Report(errOut io.Writer, err error) int {
	if err == nil {
		return ExitOK
	}
	var printed AlreadyReported
	if !errors.As(err, &printed) {
		fmt.Fprintf(errOut, "error: %v\n", err)
	}
	return ExitCode(err)
}

// NoArgs refuses positional arguments, saying what the command takes instead. (cobra's
// NoArgs calls an argument an "unknown command", which misleads on a command without
// subcommands.)
func NoArgs(instead string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return UsageErrorf("unexpected argument %q: %s takes no arguments%s", args[0], cmd.CommandPath(), instead)
		}
		return nil
	}
}

// WithUsageExitCodes makes cobra's own flag and argument errors exit with ExitUsage.
func WithUsageExitCodes(cmd *cobra.Command) {
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &ExitError{Code: ExitUsage, Err: err}
	})
	if args := cmd.Args; args != nil {
		cmd.Args = func(c *cobra.Command, a []string) error {
			if err := args(c, a); err != nil {
				return &ExitError{Code: ExitUsage, Err: err}
			}
			return nil
		}
	}
}
