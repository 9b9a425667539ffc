package top

import (
	"fmt"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/list"
)

// bigFleet is n HPAs over n/10 namespaces, one in seven with a problem.
func bigFleet(n int) []list.Row {
	rows := make([]list.Row, 0, n)
	for i := range n {
		var opts []rowOpt
		if i%7 == 0 {
			opts = append(opts, finding("CappedAtMax", v1alpha1.SeverityWarning))
		}
		rows = append(rows, row(fmt.Sprintf("ns-%03d", i/10), fmt.Sprintf("hpa-%04d", i), int32(1+i%9), int32(1+(i+1)%9), opts...))
	}
	return rows
}

// BenchmarkFrame1000 is one pass of 1,000 HPAs taken and drawn at 200x50: what a pass costs
// the screen beyond list's own reads.
func BenchmarkFrame1000(b *testing.B) {
	rows := bigFleet(1000)
	m := every(nil)
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 50})
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		m.pass(passMsg{rows: rows, at: t0.Add(time.Duration(i) * time.Second)})
		_ = m.View()
	}
}

// BenchmarkKeystroke1000 is one keystroke answered over 1,000 HPAs: a character typed into the
// filter, then the frame drawn, as the program does after each key.
func BenchmarkKeystroke1000(b *testing.B) {
	m := every(nil)
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 50})
	m.pass(passMsg{rows: bigFleet(1000), at: t0})
	m.Update(key("/"))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			m.Update(key("7"))
		} else {
			m.Update(key("backspace"))
		}
		_ = m.View()
	}
}

// BenchmarkMove1000 is the cursor moved down one row over 1,000 HPAs, and the frame drawn.
func BenchmarkMove1000(b *testing.B) {
	m := every(nil)
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 50})
	m.pass(passMsg{rows: bigFleet(1000), at: t0})
	b.ReportAllocs()
	for b.Loop() {
		m.Update(key("j"))
		_ = m.View()
	}
}
