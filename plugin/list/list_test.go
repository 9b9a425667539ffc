package list

import (
	"testing"

	"github.com/kubectl-hpa/kubectl-hpa/internal/cmdtest"
)

func TestTables(t *testing.T) {
	tests := []struct {
		golden string
		args   []string
	}{
		{"shop", []string{"-n", "shop"}},
		{"all-wide", []string{"-A", "-o", "wide"}},
		{"problems-by-would-be", []string{"-n", "shop", "--problems", "--sort-by", "would-be"}},
	}
	for _, tc := range tests {
		t.Run(tc.golden, func(t *testing.T) {
			r := run(t, shop().build(t), tc.args...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			cmdtest.CheckGolden(t, tc.golden, r.stdout)
		})
	}
}
