package lint_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-hpa/kubectl-hpa/internal/cmdtest"
	"github.com/kubectl-hpa/kubectl-hpa/plugin"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/lint/rules"
)

// examples are the manifests docs/lint.md shows lint's output of.
const examples = "../../docs/examples/lint"

type result struct {
	code           int
	stdout, stderr string
}

func run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut}
	code := plugin.Execute(context.Background(), streams, append([]string{"lint"}, args...), nil)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

func TestOutputOfTheExamples(t *testing.T) {
	for _, format := range []string{"text", "json", "yaml", "sarif", "junit"} {
		t.Run(format, func(t *testing.T) {
			r := run(t, "", "-f", examples, "-o", format)
			if r.code != cmdutil.ExitLintFindings {
				t.Errorf("exit %d, want %d (the examples have an error)", r.code, cmdutil.ExitLintFindings)
			}
			if want := "error: 1 finding at or above error (--fail-on error)\n"; r.stderr != want {
				t.Errorf("stderr %q, want %q", r.stderr, want)
			}
			cmdtest.CheckGolden(t, "examples-"+format, r.stdout)
		})
	}
}

func TestFailOnSetsTheExitCode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"an error fails by default", []string{"-f", examples}, cmdutil.ExitLintFindings, "error: 1 finding at or above error (--fail-on error)\n"},
		{"--fail-on warning counts the warnings too", []string{"-f", examples, "--fail-on", "warning"}, cmdutil.ExitLintFindings, "error: 6 findings at or above warning (--fail-on warning)\n"},
		{"--fail-on none never fails", []string{"-f", examples, "--fail-on", "none"}, cmdutil.ExitOK, ""},
		{"warnings alone pass by default", []string{"-f", examples + "/worker.yaml"}, cmdutil.ExitOK, ""},
		{"a clean file passes", []string{"-f", examples + "/shop.yaml", "--fail-on", "warning"}, cmdutil.ExitOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, "", tc.args...)
			if r.code != tc.code || r.stderr != tc.stderr {
				t.Errorf("exit %d, stderr %q; want %d, %q", r.code, r.stderr, tc.code, tc.stderr)
			}
		})
	}
}

func TestBadInputIsOneLineWithFileLineAndField(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "hpa.yaml")
	data, err := os.ReadFile(examples + "/shop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, bytes.Replace(data, []byte("  maxReplicas: 30\n"), []byte("  maxReplicas: 30\n  minReplica: 2\n"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		stdin  string
		args   []string
		stderr string
	}{
		{"an unknown HPA field", "", []string{"-f", bad}, "error: " + bad + `:15: HorizontalPodAutoscaler: unknown field "spec.minReplica" (field names are case-sensitive)` + "\n"},
		{"a syntax error on stdin", "kind: [\n", []string{"-f", "-"}, "error: -:1: did not find expected node content\n"},
		{"a missing file", "", []string{"-f", filepath.Join(dir, "nope.yaml")}, "error: " + filepath.Join(dir, "nope.yaml") + ": no such file or directory\n"},
		{"an unknown output", "", []string{"-f", bad, "-o", "html"}, "error: --output \"html\": want one of text, json, yaml, sarif, junit\n"},
		{"an unknown --fail-on", "", []string{"-f", bad, "--fail-on", "info"}, "error: --fail-on \"info\": want one of error, warning, none\n"},
		{"-f with an HPA name", "", []string{"-f", bad, "web"}, "error: -f lints manifests, NAME, -n and -A the HPAs of a cluster: give one or the other\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tc.stdin, tc.args...)
			if r.code != cmdutil.ExitUsage || r.stderr != tc.stderr || r.stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr\n%q\nwant exit %d, stderr\n%q", r.code, r.stdout, r.stderr, cmdutil.ExitUsage, tc.stderr)
			}
		})
	}
}

func TestStdinAndFilesTogether(t *testing.T) {
	data, err := os.ReadFile(examples + "/web.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, string(data), "-f", "-", "-f", examples+"/shop.yaml", "-o", "json")
	var report struct {
		APIVersion string
		Kind       string
		HPAs       []struct{ Name string }
		Findings   []struct {
			ID     string
			Source struct {
				File string
				Line int
			}
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &report); err != nil {
		t.Fatal(err)
	}
	if report.APIVersion != "hpa.kubectl-hpa.io/v1alpha1" || report.Kind != "LintReport" || len(report.HPAs) != 2 || report.HPAs[0].Name != "web" {
		t.Errorf("report %+v", report)
	}
	if f := report.Findings[0]; f.ID != "HPA006" || f.Source.File != "-" || f.Source.Line != 18 {
		t.Errorf("first finding %+v, want HPA006 at -:18", f)
	}
}

// The SARIF output validates against the SARIF 2.1.0 JSON schema (testdata/sarif-schema-2.1.0.json,
// sarif-2.1.0-rtm.5.json as the npm package @microsoft/jest-sarif 1.0.0-beta.0 ships it).
func TestSARIFValidatesAgainstTheSchema(t *testing.T) {
	c := jsonschema.NewCompiler()
	schema, err := c.Compile("testdata/sarif-schema-2.1.0.json")
	if err != nil {
		t.Fatal(err)
	}
	// The schema is read and applied: a result whose level SARIF does not have is refused.
	broken, err := jsonschema.UnmarshalJSON(strings.NewReader(`{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x"}},"results":[{"message":{"text":"m"},"level":"fatal"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(broken); err == nil {
		t.Fatal("a result with level fatal validated: the schema is not applied")
	}
	for _, args := range [][]string{{"-f", examples}, {"-f", examples + "/shop.yaml"}, {"-f", "-"}} {
		stdin := ""
		if args[1] == "-" {
			data, err := os.ReadFile(examples + "/web.yaml")
			if err != nil {
				t.Fatal(err)
			}
			stdin = string(data)
		}
		r := run(t, stdin, append(args, "-o", "sarif")...)
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(r.stdout))
		if err != nil {
			t.Fatal(err)
		}
		if err := schema.Validate(doc); err != nil {
			t.Errorf("lint %v -o sarif does not validate: %v", args, err)
		}
	}
}

func TestJUnitIsWellFormed(t *testing.T) {
	r := run(t, "", "-f", examples, "-o", "junit", "--fail-on", "warning")
	var suites struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Name     string `xml:"name,attr"`
			Failures int    `xml:"failures,attr"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(r.stdout), &suites); err != nil {
		t.Fatal(err)
	}
	if len(suites.Suites) != 3 || suites.Failures != 6 || suites.Suites[1].Name != "HorizontalPodAutoscaler shop/web" || suites.Suites[1].Failures != 4 {
		t.Errorf("junit %+v", suites)
	}
}

// docs/lint.md's table lists every rule with its severity, title and peer rule as the code has them.
func TestDocsListEveryRule(t *testing.T) {
	doc, err := os.ReadFile("../../docs/lint.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules.All() {
		row := fmt.Sprintf("| `%s` | %s | %s | %s | %s |", r.ID, r.Severity, r.Title, r.Peers, r.Fix)
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/lint.md has no row %s", row)
		}
	}
}
