package recording

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Recording is a decoded recording file.
type Recording struct {
	// Name is the file's name, for messages.
	Name   string
	Header Header
	Terms  []Term
	// Syncs in file order; Line is each one's line in the file.
	Syncs []Sync
	// CutLine is the last line when it was cut short and left out (a run that ended while
	// writing it: no newline, and it does not decode); 0 when the file ends whole.
	CutLine int
}

// ParseError is a recording that cannot be read: the file, the line (0 when the file as a
// whole is wrong) and the field (empty when the line as a whole is), on one line.
type ParseError struct {
	File  string
	Line  int
	Field string
	Err   error
}

func (e *ParseError) Error() string {
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

func (e *ParseError) Unwrap() error { return e.Err }

// ErrNewerVersion is wrapped by the error for a recording whose schema version is newer
// than Version.
var ErrNewerVersion = errors.New("recording written by a newer kubectl-hpa")

// fieldErr is a validation failure of one field, placed on its line by the reader.
type fieldErr struct {
	field string
	err   error
}

func (e *fieldErr) Error() string { return "field " + e.field + ": " + e.err.Error() }
func (e *fieldErr) Unwrap() error { return e.err }

func fieldError(field string, err error) error { return &fieldErr{field, err} }

// Open reads the recording at path; a path ending in .gz is decompressed.
func Open(path string) (*Recording, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening the recording: %w", err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return nil, &ParseError{File: path, Err: fmt.Errorf("not a gzip file: %w", err)}
		}
		defer gz.Close()
		r = gz
	}
	return Read(path, r)
}

// maxLine bounds one entry (a sync of thousands of pods is a few MB).
const maxLine = 256 << 20

// Read decodes a recording from r; name is used in messages. Every error is a *ParseError.
// A last line without its newline that does not decode is left out (CutLine): a run stopped
// by force while writing it leaves the lines before it whole.
func Read(name string, r io.Reader) (*Recording, error) {
	rec := &Recording{Name: name}
	br := bufio.NewReaderSize(r, 64<<10)
	line := 0
	for {
		data, err := br.ReadBytes('\n')
		if len(data) > 0 {
			line++
			if len(data) > maxLine {
				return nil, &ParseError{File: name, Line: line, Err: fmt.Errorf("line longer than %d bytes", maxLine)}
			}
			if perr := rec.decodeLine(line, bytes.TrimSpace(data)); perr != nil {
				if errors.Is(err, io.EOF) && line > 1 && data[len(data)-1] != '\n' {
					rec.CutLine = line
					break
				}
				perr.File = name
				return nil, perr
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, &ParseError{File: name, Line: line + 1, Err: fmt.Errorf("reading: %w", err)}
		}
	}
	if line == 0 {
		return nil, &ParseError{File: name, Err: errors.New("empty: a recording starts with its header line")}
	}
	return rec, nil
}

func (rec *Recording) decodeLine(line int, data []byte) *ParseError {
	at := func(err error) *ParseError {
		if fe, ok := errors.AsType[*fieldErr](err); ok {
			return &ParseError{Line: line, Field: fe.field, Err: fe.err}
		}
		return &ParseError{Line: line, Err: err}
	}
	if len(data) == 0 {
		return at(errors.New("empty line: every line is one JSON object"))
	}
	if line == 1 {
		if err := rec.decodeHeader(data); err != nil {
			return at(err)
		}
		return nil
	}
	var kind struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(data, &kind); err != nil {
		return at(jsonError(err))
	}
	switch kind.Kind {
	case KindTerm:
		var t Term
		if err := strict(data, &t); err != nil {
			return at(err)
		}
		if n := len(rec.Terms); n > 0 && t.Term <= rec.Terms[n-1].Term {
			return at(fieldError("term", fmt.Errorf("%d does not follow term %d", t.Term, rec.Terms[n-1].Term)))
		}
		rec.Terms = append(rec.Terms, t)
	case KindSync:
		var s Sync
		if err := strict(data, &s); err != nil {
			return at(err)
		}
		// Terms follow one another: a controller's syncs end before the next one starts.
		if n := len(rec.Terms); n == 0 || s.Term != rec.Terms[n-1].Term {
			return at(fieldError("term", fmt.Errorf("%d is not the term started last (a Term entry comes before its syncs)", s.Term)))
		}
		if err := s.validate(); err != nil {
			return at(err)
		}
		s.Line = line
		rec.Syncs = append(rec.Syncs, s)
	default:
		return at(fieldError("kind", fmt.Errorf("%q is not %s or %s", kind.Kind, KindTerm, KindSync)))
	}
	return nil
}

func (rec *Recording) decodeHeader(data []byte) error {
	// The version first, loosely: a newer file may have fields this reader does not know.
	var id struct {
		APIVersion string          `json:"apiVersion"`
		Kind       string          `json:"kind"`
		Version    json.RawMessage `json:"version"`
	}
	if err := json.Unmarshal(data, &id); err != nil {
		return fmt.Errorf("not a recording header: %w", jsonError(err))
	}
	if id.APIVersion != APIVersion || id.Kind != Kind {
		return fmt.Errorf("not a kubectl hpa run --record file: apiVersion %q, kind %q (want %s, %s)", id.APIVersion, id.Kind, APIVersion, Kind)
	}
	var version int
	if err := json.Unmarshal(id.Version, &version); err != nil {
		return fieldError("version", fmt.Errorf("%s is not a whole number", id.Version))
	}
	if version > Version {
		return fieldError("version", fmt.Errorf("%w: schema version %d is newer than this kubectl-hpa reads (%d); replay it with a newer kubectl-hpa", ErrNewerVersion, version, Version))
	}
	if version < 1 {
		return fieldError("version", fmt.Errorf("%d is not a schema version (they start at 1)", version))
	}
	if err := strict(data, &rec.Header); err != nil {
		return err
	}
	return nil
}

// strict decodes one JSON object (the line was already found to be one), refusing unknown
// fields.
func strict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return jsonError(dec.Decode(v))
}

// jsonError names the field a decoding error is about, when encoding/json knows it.
func jsonError(err error) error {
	if err == nil {
		return nil
	}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && te.Field != "" {
		return fieldError(te.Field, fmt.Errorf("%s is not a valid %s", te.Value, te.Type))
	}
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return fmt.Errorf("not valid JSON at byte %d: %w", se.Offset, err)
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return fieldError(strings.Trim(rest, `"`), errors.New("unknown to this schema version"))
	}
	return err
}
