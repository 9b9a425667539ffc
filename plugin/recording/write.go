package recording

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// Writer appends entries to a recording. Its methods may be called from several goroutines.
// Entries are buffered; Flush and Close write them out. The first error sticks: every later
// call returns it, so a full disk is reported once and the caller decides what to do.
type Writer struct {
	mu   sync.Mutex
	name string
	buf  *bufio.Writer
	gz   *gzip.Writer
	file io.Closer
	err  error
}

// Create creates (or truncates) the file at path and writes h as its first line; a path
// ending in .gz is gzip-compressed.
func Create(path string, h Header) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("creating the recording: %w", err)
	}
	w, err := newWriter(path, f, f, strings.HasSuffix(path, ".gz"), h)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return w, nil
}

// NewWriter writes a recording to out, h first; compress gzips it. Close does not close out.
func NewWriter(name string, out io.Writer, compress bool, h Header) (*Writer, error) {
	return newWriter(name, out, nil, compress, h)
}

func newWriter(name string, out io.Writer, file io.Closer, compress bool, h Header) (*Writer, error) {
	w := &Writer{name: name, file: file}
	if compress {
		w.gz = gzip.NewWriter(out)
		out = w.gz
	}
	w.buf = bufio.NewWriterSize(out, 64<<10)
	h.APIVersion, h.Kind, h.Version = APIVersion, Kind, Version
	if err := w.write(h); err != nil {
		return nil, err
	}
	return w, nil
}

// Term records that a new controller started.
func (w *Writer) Term(t Term) error {
	t.Kind = KindTerm
	return w.write(t)
}

// Sync records one reconcile.
func (w *Writer) Sync(s Sync) error {
	s.Kind = KindSync
	return w.write(s)
}

func (w *Writer) write(v any) error {
	data, err := json.Marshal(v)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if err != nil {
		// A value JSON cannot hold (a NaN tolerance): this entry is lost, not the file.
		return fmt.Errorf("recording to %s: encoding an entry: %w", w.name, err)
	}
	data = append(data, '\n')
	if _, err := w.buf.Write(data); err != nil {
		w.err = fmt.Errorf("writing the recording %s: %w", w.name, err)
	}
	return w.err
}

// Flush writes buffered entries through to the file (a gzip stream is flushed too, so
// what is on disk decompresses up to the last entry).
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flush()
}

func (w *Writer) flush() error {
	if w.err != nil {
		return w.err
	}
	if err := w.buf.Flush(); err != nil {
		w.err = fmt.Errorf("writing the recording %s: %w", w.name, err)
		return w.err
	}
	if w.gz != nil {
		if err := w.gz.Flush(); err != nil {
			w.err = fmt.Errorf("writing the recording %s: %w", w.name, err)
		}
	}
	return w.err
}

// errClosed is returned by calls after Close.
var errClosed = errors.New("the recording is closed")

// Close flushes, ends the gzip stream and closes the file. It is safe to call twice.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if errors.Is(w.err, errClosed) {
		return nil
	}
	err := w.flush()
	if w.gz != nil && err == nil {
		if cerr := w.gz.Close(); cerr != nil {
			err = fmt.Errorf("writing the recording %s: %w", w.name, cerr)
		}
	}
	if w.file != nil {
		if cerr := w.file.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing the recording %s: %w", w.name, cerr)
		}
	}
	w.err = fmt.Errorf("recording to %s: %w", w.name, errClosed)
	return err
}
