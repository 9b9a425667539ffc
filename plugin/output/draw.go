package output

import (
	"bytes"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"
)

// Table writes rows under header in columns two spaces apart, each line after indent: the one
// table of every text output.
func Table(b *bytes.Buffer, indent, header string, rows [][]string) {
	tw := tabwriter.NewWriter(b, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, indent+header)
	for _, r := range rows {
		fmt.Fprintln(tw, indent+strings.Join(r, "\t"))
	}
	_ = tw.Flush()
}

// Seconds prints a number of seconds as a duration ("5s", "2.25s").
func Seconds(s float64) string {
	return time.Duration(s * float64(time.Second)).String()
}
