package mcpserver

import (
	"bufio"
	"errors"
	"io"
)

// DefaultMaxMessageBytes is the largest JSON-RPC message the server reads
// when not told otherwise, over stdio (one line) and over HTTP (one POST
// body).
const DefaultMaxMessageBytes = 4 << 20

// lineReader reads newline-delimited messages (MCP's stdio framing: a
// message is one line, "\n" or "\r\n" ends it) of at most max bytes. A
// longer line is never held whole: once it passes max, its first bytes are
// kept (to read its id from) and the rest is read and dropped as it
// streams by, and next reports a *lineTooLongError; reading goes on with
// the next line. Memory stays within max plus the reader's buffer,
// whatever comes in.
type lineReader struct {
	r   *bufio.Reader
	max int
}

// lineHead is how much of an oversized line is kept to read its id from.
const lineHead = 4 << 10

// lineTooLongError is a line that exceeded the limit and was dropped.
type lineTooLongError struct {
	Limit int
	Head  []byte // the line's first bytes
}

func (e *lineTooLongError) Error() string {
	return "an incoming JSON-RPC message exceeded the maximum length"
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its end, in a slice of its own. The
// last line of the stream needs no end. Errors other than
// *lineTooLongError (io.EOF among them) end the stream.
func (l *lineReader) next() ([]byte, error) {
	var line []byte
	for {
		part, err := l.r.ReadSlice('\n')
		whole := err == nil // part ends the line
		if n := len(line) + len(part) - lineEnd(line, part, whole); n > l.max {
			head := lineStart(line, part)
			switch {
			case whole || err == io.EOF:
				return nil, &lineTooLongError{Limit: l.max, Head: head}
			case errors.Is(err, bufio.ErrBufferFull):
				return nil, l.drop(head)
			default:
				return nil, err
			}
		}
		if line == nil && !errors.Is(err, bufio.ErrBufferFull) {
			line = make([]byte, 0, len(part)) // the usual case: one piece
		}
		line = append(line, part...)
		switch {
		case whole:
			return line[:len(line)-lineEnd(line, nil, true)], nil
		case errors.Is(err, bufio.ErrBufferFull):
		case err == io.EOF && len(line) > 0:
			return line, nil // the last line; EOF comes with the next call
		default:
			return nil, err
		}
	}
}

// lineEnd is the length of the line end ("\n" or "\r\n") that ends line
// followed by part, when whole; 0 otherwise.
func lineEnd(line, part []byte, whole bool) int {
	if !whole {
		return 0
	}
	prev := func(i int) byte { // the byte i from the end of line+part
		if i < len(part) {
			return part[len(part)-1-i]
		}
		return line[len(line)-1-(i-len(part))]
	}
	if len(line)+len(part) >= 2 && prev(1) == '\r' {
		return 2
	}
	return 1
}

// lineStart is a copy of the first bytes of line followed by part.
func lineStart(line, part []byte) []byte {
	head := make([]byte, 0, lineHead)
	head = append(head, line[:min(len(line), lineHead)]...)
	return append(head, part[:min(len(part), lineHead-len(head))]...)
}

// drop reads and discards the rest of an oversized line.
func (l *lineReader) drop(head []byte) error {
	for {
		_, err := l.r.ReadSlice('\n')
		switch {
		case err == nil, err == io.EOF:
			return &lineTooLongError{Limit: l.max, Head: head}
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return err
		}
	}
}
