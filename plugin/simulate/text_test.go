package simulate

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/kubectl-hpa/kubectl-hpa/internal/golden"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

// The text of the Simulation plugin/output's tests build (its JSON golden): the model, the
// workload and variants, the summary, a chart per variant.
func TestTextOfASimulationMatchesGolden(t *testing.T) {
	data, err := os.ReadFile("../output/testdata/simulation.json.golden")
	if err != nil {
		t.Fatal(err)
	}
	var s v1alpha1.Simulation
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := RenderText(&b, &s, output.ChartOptions{Width: 80}); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "simulation.txt.golden"), b.Bytes())
}
