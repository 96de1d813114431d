package mcpserver

import (
	"io"
	"sync"
)

// answerWriter writes a stdio connection's quick answers (stdioinline.go).
// The reader hands it every answer and writes only what the output pipe
// takes at once (pipeRoom); the rest goes out from a goroutine of its own,
// so that a client that writes its calls before it reads the answers does
// not stop the reader (the SDK's reader does not wait on the client
// either).
type answerWriter struct {
	w       io.Writer
	writeMu *sync.Mutex      // the connection's: one write at a time
	room    func(n int) bool // nil, or whether n bytes fit in the pipe now

	mu      sync.Mutex
	ready   *sync.Cond // more to write, written, or closed
	out     []byte     // whole lines, held
	writing bool       // run is writing what it took
	err     error      // the first failed write
	closed  bool
}

func newAnswerWriter(w io.Writer, writeMu *sync.Mutex) *answerWriter {
	a := &answerWriter{w: w, writeMu: writeMu, room: pipeRoom(w)}
	a.ready = sync.NewCond(&a.mu)
	return a
}

// maxHeldAnswers bounds the bytes of answers held for the next ones while
// calls keep coming.
const maxHeldAnswers = 64 << 10

// queue holds an answer until now, then writes it with those held: at
// once when they fit in the output pipe and nothing else is being written
// (no goroutine to wake, and no wait on the client), else through run. It
// fails with the first failed write.
func (a *answerWriter) queue(answer []byte, now bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		return a.err
	}
	a.out = append(append(a.out, answer...), '\n')
	if !now && len(a.out) < maxHeldAnswers {
		return nil
	}
	if a.room != nil && !a.writing && a.writeMu.TryLock() {
		if a.room(len(a.out)) {
			_, err := a.w.Write(a.out)
			a.writeMu.Unlock()
			a.out = a.out[:0]
			if err != nil {
				a.err, a.out = err, nil
			}
			return err
		}
		a.writeMu.Unlock()
	}
	a.ready.Broadcast()
	return nil
}

// flush lets run write what is held.
func (a *answerWriter) flush() {
	a.mu.Lock()
	if len(a.out) > 0 {
		a.ready.Broadcast()
	}
	a.mu.Unlock()
}

// drain waits until every held answer is written (or a write failed, or
// the connection closed).
func (a *answerWriter) drain() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ready.Broadcast()
	for (len(a.out) > 0 || a.writing) && a.err == nil && !a.closed {
		a.ready.Wait()
	}
}

// close ends run.
func (a *answerWriter) close() {
	a.mu.Lock()
	a.closed = true
	a.ready.Broadcast()
	a.mu.Unlock()
}

// run writes the held answers, as many at a time as there are, until
// close.
func (a *answerWriter) run() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for {
		for len(a.out) == 0 && !a.closed {
			a.ready.Wait()
		}
		if a.closed {
			return
		}
		out := a.out
		a.out, a.writing = nil, true
		a.mu.Unlock()
		a.writeMu.Lock()
		_, err := a.w.Write(out)
		a.writeMu.Unlock()
		a.mu.Lock()
		a.writing = false
		if err != nil && a.err == nil {
			a.err = err
		}
		if a.err != nil {
			a.out = nil // nothing more can be written
		}
		a.ready.Broadcast()
	}
}
