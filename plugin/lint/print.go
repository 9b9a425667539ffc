package lint

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/kubectl-hpa/kubectl-hpa/internal/manifest"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/lint/rules"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

func writeJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func writeYAML(w io.Writer, r *Report) error {
	return (&output.YAMLPrinter{}).PrintObj(r, w)
}

func (s *Location) String() string {
	if s == nil {
		return ""
	}
	return fmt.Sprintf("%s:%d", s.File, s.Line)
}

// hpaName is an HPA's namespace/name, or its name when the manifest names no namespace.
func hpaName(r rules.ObjectRef) string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}

// writeText prints the findings grouped by HPA, worst first, each with its field, where it is
// in the manifests, why it matters and the fix; then a summary line.
func writeText(w io.Writer, r *Report) error {
	var b strings.Builder
	for _, h := range r.HPAs {
		fmt.Fprintf(&b, "HorizontalPodAutoscaler %s", hpaName(h.ObjectRef))
		if h.Source != nil {
			fmt.Fprintf(&b, " (%s)", h.Source)
		}
		var mine []Finding
		for _, f := range r.Findings {
			if f.HPA == h.ObjectRef {
				mine = append(mine, f)
			}
		}
		if len(mine) == 0 {
			b.WriteString(": no findings\n\n")
			continue
		}
		b.WriteString("\n")
		for _, f := range mine {
			output.WriteFinding(&b, output.FindingOfLint(f.Finding), f.Source.String())
		}
		b.WriteString("\n")
	}
	s := r.Summary
	fmt.Fprintf(&b, "%d %s checked: %d %s, %d %s, %d %s\n", s.HPAs, plural(s.HPAs, "HPA", "HPAs"),
		s.Errors, plural(s.Errors, "error", "errors"), s.Warnings, plural(s.Warnings, "warning", "warnings"), s.Infos, plural(s.Infos, "info", "infos"))
	_, err := io.WriteString(w, b.String())
	return err
}

// SARIF 2.1.0, the parts lint fills in (https://docs.oasis-open.org/sarif/sarif/v2.1.0/).
type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool    sarifTool     `json:"tool"`
	Results []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID                   string             `json:"id"`
	ShortDescription     sarifMessage       `json:"shortDescription"`
	FullDescription      sarifMessage       `json:"fullDescription"`
	Help                 sarifMessage       `json:"help"`
	DefaultConfiguration sarifConfiguration `json:"defaultConfiguration"`
	Properties           map[string]string  `json:"properties,omitempty"`
}

type sarifConfiguration struct {
	Level string `json:"level"`
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifResult struct {
	RuleID    string          `json:"ruleId"`
	RuleIndex int             `json:"ruleIndex"`
	Level     string          `json:"level"`
	Message   sarifMessage    `json:"message"`
	Locations []sarifLocation `json:"locations"`
}

type sarifLocation struct {
	PhysicalLocation *sarifPhysicalLocation `json:"physicalLocation,omitempty"`
	LogicalLocations []sarifLogicalLocation `json:"logicalLocations"`
}

type sarifPhysicalLocation struct {
	ArtifactLocation sarifArtifactLocation `json:"artifactLocation"`
	Region           sarifRegion           `json:"region"`
}

type sarifArtifactLocation struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine int `json:"startLine"`
}

type sarifLogicalLocation struct {
	FullyQualifiedName string `json:"fullyQualifiedName"`
	Kind               string `json:"kind"`
}

// sarifLevel maps a severity to SARIF's levels (info is a note).
func sarifLevel(s rules.Severity) string {
	if s == rules.SeverityInfo {
		return "note"
	}
	return string(s)
}

// writeSARIF prints the report as one SARIF 2.1.0 run: every rule, and a result per finding
// at its file and line (standard input has no file: the object's name locates it).
func writeSARIF(w io.Writer, r *Report) error {
	all := rules.All()
	index := map[string]int{}
	driver := sarifDriver{Name: "kubectl-hpa lint", InformationURI: "https://github.com/kubectl-hpa/kubectl-hpa/blob/main/docs/lint.md"}
	for i, rule := range all {
		index[rule.ID] = i
		driver.Rules = append(driver.Rules, sarifRule{
			ID:                   rule.ID,
			ShortDescription:     sarifMessage{Text: rule.Title},
			FullDescription:      sarifMessage{Text: rule.Title + ": " + rule.Why},
			Help:                 sarifMessage{Text: rule.Fix},
			DefaultConfiguration: sarifConfiguration{Level: sarifLevel(rule.Severity)},
			Properties:           map[string]string{"peers": rule.Peers},
		})
	}
	results := []sarifResult{}
	for _, f := range r.Findings {
		loc := sarifLocation{LogicalLocations: []sarifLogicalLocation{{FullyQualifiedName: qualifiedName(f.Object, f.Path), Kind: "object"}}}
		if f.Source != nil && f.Source.File != manifest.Stdin {
			loc.PhysicalLocation = &sarifPhysicalLocation{ArtifactLocation: sarifArtifactLocation{URI: filepath.ToSlash(f.Source.File)}, Region: sarifRegion{StartLine: max(f.Source.Line, 1)}}
		}
		results = append(results, sarifResult{
			RuleID: f.ID, RuleIndex: index[f.ID], Level: sarifLevel(f.Severity),
			Message:   sarifMessage{Text: fmt.Sprintf("HorizontalPodAutoscaler %s: %s. Fix: %s", hpaName(f.HPA), f.Message, f.Fix)},
			Locations: []sarifLocation{loc},
		})
	}
	log := sarifLog{Schema: "https://json.schemastore.org/sarif-2.1.0.json", Version: "2.1.0", Runs: []sarifRun{{Tool: sarifTool{Driver: driver}, Results: results}}}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(log)
}

// qualifiedName is kind/namespace/name and the field path, e.g.
// HorizontalPodAutoscaler/shop/web/spec.minReplicas.
func qualifiedName(ref rules.ObjectRef, path string) string {
	s := ref.String()
	if path != "" {
		s += "/" + path
	}
	return s
}

// JUnit XML, as CI systems read it: a test suite per HPA, a test case per rule; a finding at
// or above --fail-on is a failure, others are the case's output.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string         `xml:"name,attr"`
	ClassName string         `xml:"classname,attr"`
	Failures  []junitFailure `xml:"failure"`
	SystemOut string         `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

func writeJUnit(w io.Writer, r *Report, failOn string) error {
	threshold := 99
	if failOn != "none" {
		threshold = rules.Severity(failOn).Rank()
	}
	all := rules.All()
	out := junitSuites{Name: "kubectl hpa lint"}
	for _, h := range r.HPAs {
		suite := junitSuite{Name: "HorizontalPodAutoscaler " + hpaName(h.ObjectRef), Tests: len(all)}
		for _, rule := range all {
			c := junitCase{Name: rule.ID + " " + rule.Title, ClassName: hpaName(h.ObjectRef)}
			var notes []string
			for _, f := range r.Findings {
				if f.HPA != h.ObjectRef || f.ID != rule.ID {
					continue
				}
				text := fmt.Sprintf("%s %s: %s\nwhy: %s\nfix: %s", f.Object, f.Path, f.Message, f.Why, f.Fix)
				if f.Source != nil {
					text = f.Source.String() + ": " + text
				}
				if f.Severity.Rank() >= threshold {
					c.Failures = append(c.Failures, junitFailure{Message: f.Message, Type: string(f.Severity), Text: text})
				} else {
					notes = append(notes, string(f.Severity)+": "+text)
				}
			}
			c.SystemOut = strings.Join(notes, "\n")
			if len(c.Failures) > 0 {
				suite.Failures++
			}
			suite.Cases = append(suite.Cases, c)
		}
		out.Tests += suite.Tests
		out.Failures += suite.Failures
		out.Suites = append(out.Suites, suite)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
