// Package fileerr is the error of an input file that cannot be read (a manifest, a recording,
// a load), said on one line as editors and compilers say it: FILE:LINE: field F: what is wrong.
package fileerr

import (
	"fmt"
	"strings"
)

// Error is a file that cannot be read: the file, the line (0 when the file as a whole is
// wrong), the field (empty when the line as a whole is) and what is wrong.
type Error struct {
	File  string
	Line  int
	Field string
	Err   error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Field != "" {
		fmt.Fprintf(&b, "field %s: ", e.Field)
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }
