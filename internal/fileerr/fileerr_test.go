package fileerr

import (
	"errors"
	"io"
	"testing"
)

func TestErrorSaysFileLineAndFieldOnOneLine(t *testing.T) {
	cases := []struct {
		name string
		err  *Error
		want string
	}{
		{"the file as a whole", &Error{File: "load.csv", Err: errors.New("empty")}, "load.csv: empty"},
		{"a line", &Error{File: "load.csv", Line: 3, Err: errors.New("bad row")}, "load.csv:3: bad row"},
		{"a field of a line", &Error{File: "load.yaml", Line: 7, Field: "points[0].at", Err: errors.New("not a time")}, "load.yaml:7: field points[0].at: not a time"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestErrorUnwrapsToWhatIsWrong(t *testing.T) {
	err := error(&Error{File: "r.jsonl", Line: 2, Err: io.ErrUnexpectedEOF})
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("errors.Is(%v, io.ErrUnexpectedEOF) = false", err)
	}
}
