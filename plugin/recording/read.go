package recording

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"strings"

	"github.com/kubectl-hpa/kubectl-hpa/internal/fileerr"
)

// Reader reads a recording one entry at a time, so that rerunning a file holds one sync of
// it, not the file: a run of thousands of HPAs records about 10 KB a sync, a gigabyte an hour.
type Reader struct {
	// Name is the file's name, for messages.
	Name   string
	Header Header
	// Terms are the Term entries read so far.
	Terms []Term
	// CutLine is the last line when it was cut short and left out (a run that ended while
	// writing it: no newline, and it does not decode); 0 when the file ends whole. It is
	// known once Next has returned io.EOF.
	CutLine int

	br   *bufio.Reader
	line int
	// unended says the line just read has no newline: the file's last, maybe cut short.
	unended bool
	syncs   int
	close   func() error
}

// Recording is a recording read whole, or the syncs of the HPAs a caller kept from it.
type Recording struct {
	// Name is the file's name, for messages.
	Name   string
	Header Header
	Terms  []Term
	// Syncs in file order; Line is each one's line in the file, Index its place among the
	// file's syncs.
	Syncs []Sync
	// Keys are the HPAs ("ns/name") of every sync of the file, kept or not, in the order of
	// their first sync.
	Keys []string
	// CutLine is the Reader's.
	CutLine int
}

// ParseError is a recording that cannot be read, on one line: the file, the line (0 when the
// file as a whole is wrong) and the field (empty when the line as a whole is).
type ParseError = fileerr.Error

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

// Open opens the recording at path and reads its header; a path ending in .gz is
// decompressed. Close the Reader when done.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening the recording: %w", err)
	}
	var r io.Reader = f
	closeAll := f.Close
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			_ = f.Close()
			return nil, &ParseError{File: path, Err: fmt.Errorf("not a gzip file: %w", err)}
		}
		r = gz
		closeAll = func() error { return errors.Join(gz.Close(), f.Close()) }
	}
	rd, err := NewReader(path, r)
	if err != nil {
		_ = closeAll()
		return nil, err
	}
	rd.close = closeAll
	return rd, nil
}

// Load reads the recording at path whole, keeping the syncs of the HPAs keep accepts (every
// one when keep is nil).
func Load(path string, keep func(key string) bool) (*Recording, error) {
	r, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.ReadAll(keep)
}

// Read decodes a whole recording from r; name is used in messages.
func Read(name string, r io.Reader) (*Recording, error) {
	rd, err := NewReader(name, r)
	if err != nil {
		return nil, err
	}
	return rd.ReadAll(nil)
}

// maxLine bounds one entry (a sync of thousands of pods is a few MB).
const maxLine = 256 << 20

// NewReader reads a recording from r, its header first; name is used in messages. Every
// error it and Next return is a *ParseError, but io.EOF.
func NewReader(name string, r io.Reader) (*Reader, error) {
	rd := &Reader{Name: name, br: bufio.NewReaderSize(r, 64<<10)}
	data, err := rd.readLine()
	if errors.Is(err, io.EOF) {
		return nil, &ParseError{File: name, Err: errors.New("empty: a recording starts with its header line")}
	}
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, rd.at(errors.New("empty line: a recording starts with its header line"))
	}
	if err := rd.decodeHeader(data); err != nil {
		return nil, rd.at(err)
	}
	return rd, nil
}

// Close closes the file Open opened.
func (r *Reader) Close() error {
	if r.close == nil {
		return nil
	}
	err := r.close()
	r.close = nil
	return err
}

// Next returns the next sync in file order, with its Line and Index set, and io.EOF after the
// last one. A last line without its newline that does not decode is left out (CutLine): a
// run stopped by force while writing it leaves the lines before it whole.
func (r *Reader) Next() (*Sync, error) {
	for {
		data, err := r.readLine()
		if err != nil {
			return nil, err
		}
		s, err := r.decodeEntry(data)
		if err != nil {
			return nil, r.at(err)
		}
		if s != nil {
			s.Index = r.syncs
			r.syncs++
			return s, nil
		}
	}
}

// All yields every remaining sync, then the error that ended the file if it is not io.EOF.
func (r *Reader) All() iter.Seq2[*Sync, error] {
	return func(yield func(*Sync, error) bool) {
		for {
			s, err := r.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if !yield(s, err) || err != nil {
				return
			}
		}
	}
}

// ReadAll reads the rest of the file, keeping the syncs of the HPAs keep accepts (every one
// when keep is nil).
func (r *Reader) ReadAll(keep func(key string) bool) (*Recording, error) {
	rec := &Recording{Name: r.Name, Header: r.Header}
	seen := map[string]bool{}
	for s, err := range r.All() {
		if err != nil {
			return nil, err
		}
		if !seen[s.Key] {
			seen[s.Key] = true
			rec.Keys = append(rec.Keys, s.Key)
		}
		if keep == nil || keep(s.Key) {
			rec.Syncs = append(rec.Syncs, *s)
		}
	}
	rec.Terms, rec.CutLine = r.Terms, r.CutLine
	return rec, nil
}

// All yields the syncs held, as a Reader's All yields a file's.
func (rec *Recording) All() iter.Seq2[*Sync, error] {
	return func(yield func(*Sync, error) bool) {
		for i := range rec.Syncs {
			if !yield(&rec.Syncs[i], nil) {
				return
			}
		}
	}
}

// readLine is the next line; io.EOF at the end of the file.
func (r *Reader) readLine() ([]byte, error) {
	data, err := r.br.ReadBytes('\n')
	if len(data) == 0 {
		if err == nil || errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, &ParseError{File: r.Name, Line: r.line + 1, Err: fmt.Errorf("reading: %w", err)}
	}
	r.line++
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, &ParseError{File: r.Name, Line: r.line, Err: fmt.Errorf("reading: %w", err)}
	}
	r.unended = data[len(data)-1] != '\n'
	if len(data) > maxLine {
		return nil, &ParseError{File: r.Name, Line: r.line, Err: fmt.Errorf("line longer than %d bytes", maxLine)}
	}
	return bytes.TrimSpace(data), nil
}

// at places err on the line just read. A last line without its newline that does not decode
// is taken as cut short, and the file as ending before it (io.EOF); the header is never.
func (r *Reader) at(err error) error {
	if r.line > 1 && r.unended {
		r.CutLine = r.line
		return io.EOF
	}
	if fe, ok := errors.AsType[*fieldErr](err); ok {
		return &ParseError{File: r.Name, Line: r.line, Field: fe.field, Err: fe.err}
	}
	return &ParseError{File: r.Name, Line: r.line, Err: err}
}

// decodeEntry decodes a line after the header: a sync, or nil for a term.
func (r *Reader) decodeEntry(data []byte) (*Sync, error) {
	if len(data) == 0 {
		return nil, errors.New("empty line: every line is one JSON object")
	}
	var kind struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(data, &kind); err != nil {
		return nil, jsonError(err)
	}
	switch kind.Kind {
	case KindTerm:
		var t Term
		if err := strict(data, &t); err != nil {
			return nil, err
		}
		if n := len(r.Terms); n > 0 && t.Term <= r.Terms[n-1].Term {
			return nil, fieldError("term", fmt.Errorf("%d does not follow term %d", t.Term, r.Terms[n-1].Term))
		}
		r.Terms = append(r.Terms, t)
		return nil, nil
	case KindSync:
		s := &Sync{}
		if err := strict(data, s); err != nil {
			return nil, err
		}
		// Terms follow one another: a controller's syncs end before the next one starts.
		if n := len(r.Terms); n == 0 || s.Term != r.Terms[n-1].Term {
			return nil, fieldError("term", fmt.Errorf("%d is not the term started last (a Term entry comes before its syncs)", s.Term))
		}
		if err := s.validate(); err != nil {
			return nil, err
		}
		s.Line = r.line
		return s, nil
	}
	return nil, fieldError("kind", fmt.Errorf("%q is not %s or %s", kind.Kind, KindTerm, KindSync))
}

func (r *Reader) decodeHeader(data []byte) error {
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
	if err := strict(data, &r.Header); err != nil {
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
