package action

import (
	"bytes"
	"io"
	"strings"
	"sync"
)

// maxStreamLine bounds a line forwarded to the run's output: a command
// that prints without newlines is forwarded in pieces this long.
const maxStreamLine = 4096

// capture keeps the first limit bytes of a command's stream and forwards it
// line by line to the run's output (whole lines, or pieces of maxStreamLine
// bytes of a longer one: the engine's writer masks secrets per line and
// holds back the end of a piece that a secret could continue from). It never fails a write — a short write would close the pipe
// and kill the command with SIGPIPE for printing too much.
type capture struct {
	limit     int64
	buf       bytes.Buffer
	truncated bool

	out     io.Writer   // nil: no forwarding
	outMu   *sync.Mutex // shared by the streams of one command
	pending []byte
}

func newCapture(limit int64, out io.Writer, mu *sync.Mutex) *capture {
	return &capture{limit: limit, out: out, outMu: mu}
}

// Write implements io.Writer. What is kept is also what is forwarded: a
// command that floods its output does not flood the log either.
func (c *capture) Write(p []byte) (int, error) {
	keep := min(int64(len(p)), max(c.limit-int64(c.buf.Len()), 0))
	c.buf.Write(p[:keep])
	if keep < int64(len(p)) {
		c.truncated = true
	}
	c.forward(p[:keep])
	return len(p), nil
}

// forward passes whole lines on to the run's output.
func (c *capture) forward(p []byte) {
	if c.out == nil {
		return
	}
	c.pending = append(c.pending, p...)
	for {
		i := bytes.IndexByte(c.pending, '\n')
		if i < 0 && len(c.pending) < maxStreamLine {
			return
		}
		n := i + 1
		if i < 0 || n > maxStreamLine {
			n = maxStreamLine
		}
		c.emit(c.pending[:n])
		c.pending = c.pending[n:]
	}
}

// flush forwards what is left after the command ended.
func (c *capture) flush() {
	if c.out != nil && len(c.pending) > 0 {
		c.emit(append(c.pending, '\n'))
		c.pending = nil
	}
}

func (c *capture) emit(line []byte) {
	c.outMu.Lock()
	defer c.outMu.Unlock()
	_, _ = c.out.Write(line)
}

// text is the kept output as text (a cut through a character is
// replaced, not left invalid).
func (c *capture) text() string { return strings.ToValidUTF8(c.buf.String(), "\uFFFD") }

// tail returns the last n lines of the kept output, at most size bytes.
func (c *capture) tail(n, size int) string {
	s := strings.TrimRight(c.text(), "\n")
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	t := strings.Join(lines, "\n")
	if len(t) > size {
		t = "…" + strings.ToValidUTF8(t[len(t)-size:], "")
	}
	return t
}
