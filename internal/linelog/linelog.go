// Package linelog turns a byte stream (a child process's output, an
// action's printed lines) into log records, one per line.
package linelog

import (
	"bytes"
	"sync"
)

// Writer is an io.Writer that calls Emit once per complete line written to
// it, without its line ending ("\n" or "\r\n"). A line longer than Max bytes
// is emitted in pieces of Max bytes, so what is held is bounded (a line of
// exactly Max bytes is one piece); Flush
// emits what is left of an unterminated last line. Safe for concurrent use;
// Emit is called with the writer's lock held, in order.
type Writer struct {
	// Max bounds a line (default 64 KiB).
	Max int
	// Emit receives each line; the slice is valid only during the call.
	Emit func(line []byte)

	mu  sync.Mutex
	buf []byte
}

// DefaultMax is a line's bound when Max is zero.
const DefaultMax = 64 << 10

// Write emits every line p completes.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	limit := w.Max
	if limit <= 0 {
		limit = DefaultMax
	}
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		next := i + 1
		if i < 0 || i > limit {
			if len(w.buf) <= limit {
				return len(p), nil
			}
			i, next = limit, limit
		}
		w.Emit(bytes.TrimSuffix(w.buf[:i], []byte("\r")))
		w.buf = append(w.buf[:0], w.buf[next:]...)
	}
}

// Flush emits an unterminated last line, if any.
func (w *Writer) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.Emit(bytes.TrimSuffix(w.buf, []byte("\r")))
		w.buf = w.buf[:0]
	}
}
