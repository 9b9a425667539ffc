package cmdutil

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"
	"k8s.io/utils/clock"
)

// Watch runs sync at once and then every period until ctx is done: explain --watch and list
// --watch. A failing sync does not end the watch, as it does not stop a controller: its error
// goes to errOut, and the watch ends with the latest sync's failure (AlreadyReported, so not
// printed twice), or nil when the latest succeeded, so a watch stopped while the HPAs cannot
// be read exits with that failure's code. A sync that returns an error once ctx is done was
// cut short by the stop: it does not count, the one before stands. A sync must print nothing
// of a frame it does not finish.
func Watch(ctx context.Context, clk clock.WithTicker, period time.Duration, errOut io.Writer, sync func(ctx context.Context) error) error {
	ticker := clk.NewTicker(period)
	defer ticker.Stop()
	var last error
	for {
		err := sync(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			return last
		case err != nil:
			fmt.Fprintf(errOut, "error: %v\n", err)
			last = AlreadyReported{Err: err}
		default:
			last = nil
		}
		select {
		case <-ctx.Done():
			return last
		case <-ticker.C():
		}
	}
}

// Frames starts each frame of a watch on Out. On a terminal (Redraw) the next frame replaces
// the one before: the screen is cleared and the cursor sent home, as watch(1) does. Elsewhere
// (a pipe, a file, a CI log) the frames follow one another, every one but the first after a
// "---" line, so all of them are kept and can be told apart.
type Frames struct {
	Out    io.Writer
	Redraw bool
	n      int
}

// clearScreen is the ANSI sequence for cursor home, then erase the whole screen.
const clearScreen = "\x1b[H\x1b[2J"

// Start begins the next frame.
func (f *Frames) Start() {
	switch {
	case f.Redraw:
		fmt.Fprint(f.Out, clearScreen)
	case f.n > 0:
		fmt.Fprintln(f.Out, "---")
	}
	f.n++
}

// IsTerminal says whether out is a terminal (an *os.File on a TTY).
func IsTerminal(out io.Writer) bool { return isTTY(out) }

// IsTerminalReader says whether in is a terminal (an *os.File on a TTY).
func IsTerminalReader(in io.Reader) bool { return isTTY(in) }

func isTTY(stream any) bool {
	f, ok := stream.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
