package explain

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-hpa/kubectl-hpa/internal/golden"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
)

// builtExplanations are the Explanations plugin/output's tests build from their scenarios, as
// its JSON goldens hold them, by name: the text printer's inputs.
func builtExplanations(t *testing.T) map[string]*v1alpha1.Explanation {
	t.Helper()
	files, err := filepath.Glob("../output/testdata/*.json.golden")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*v1alpha1.Explanation{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var e v1alpha1.Explanation
		if err := json.Unmarshal(data, &e); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if e.Kind != v1alpha1.KindExplanation {
			continue
		}
		out[strings.TrimSuffix(filepath.Base(f), ".json.golden")] = &e
	}
	if len(out) < 5 {
		t.Fatalf("%d Explanations in ../output/testdata, want the builder's scenarios", len(out))
	}
	return out
}

func renderText(t *testing.T, e *v1alpha1.Explanation) string {
	t.Helper()
	var buf bytes.Buffer
	if err := (TextPrinter{}).PrintObj(e, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestTextOfEachBuiltExplanationMatchesGolden(t *testing.T) {
	for name, e := range builtExplanations(t) {
		t.Run(name, func(t *testing.T) {
			golden.Check(t, filepath.Join("testdata", name+".txt.golden"), []byte(renderText(t, e)))
		})
	}
}

// TestTextLeadsWithTheVerdict: a reader sees which HPA, its target, the verdict and what binds
// it, and the warnings before any detail they were derived from.
func TestTextLeadsWithTheVerdict(t *testing.T) {
	for name, e := range builtExplanations(t) {
		t.Run(name, func(t *testing.T) {
			out := renderText(t, e)
			lines := strings.Split(out, "\n")
			wantPrefixes := []string{"Name:", "Namespace:", "Target:", "Verdict:", "  Binding constraint:"}
			for i, p := range wantPrefixes {
				if i >= len(lines) || !strings.HasPrefix(lines[i], p) {
					t.Fatalf("line %d does not start with %q; output:\n%s", i+1, p, out)
				}
			}
			if w := e.Warnings; len(w) > 0 {
				head := strings.Join(lines[:min(len(lines), 8+len(w)+len(e.WhatIf))], "\n")
				if !strings.Contains(head, "Warnings:\n  "+w[0].Reason+": ") {
					t.Errorf("warnings are not right after the verdict; output:\n%s", out)
				}
			}
		})
	}
}

func TestTextOfAnHPAWithoutStatusSaysSo(t *testing.T) {
	out := renderText(t, builtExplanations(t)["cluster-status-never-written"])
	if !strings.Contains(out, "no controller has written status yet") || strings.Contains(out, "DISAGREES") {
		t.Errorf("want %q and no DISAGREES:\n%s", "no controller has written status yet", out)
	}
}
