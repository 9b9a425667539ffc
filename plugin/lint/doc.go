// Package lint is "kubectl hpa lint -f": it reads manifests (internal/manifest), checks the HPAs
// in them and the objects beside them with plugin/lint/rules's rules, and prints the findings as
// text grouped by HPA, as a versioned LintReport in JSON or YAML, as SARIF 2.1.0 for code
// scanning, or as JUnit XML; --fail-on sets when findings fail the command.
package lint
