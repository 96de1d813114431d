package cli

import (
	"io"
	"os"
	"sync"
	"time"
)

// termInput is the one reader of the terminal for all the questions of a
// command. A goroutine reads the terminal into a buffer for as long as the
// command asks; each question's form reads that buffer through an
// inputSession of its own. A session hands out keys only up to a key that
// may end the question (Enter, and y/n on a confirmation) and then holds
// the rest until the form has reacted: the keys typed after an answer stay
// in the buffer for the next question instead of reaching a form that is
// finishing (huh moves to the next field and submits through commands that
// run after the key, so keys read meanwhile land in the old field or are
// lost with the program).
type termInput struct {
	mu   sync.Mutex
	cond *sync.Cond
	buf  []byte
	err  error // the read error that ended the reader (io.EOF when the terminal closed)
	scan keyScanner

	r       *os.File
	done    chan struct{}
	restore func()
	once    sync.Once
}

// holdFallback is how long a form that was given a gate key and did not
// react to it (a key huh ignored: neither the next field nor a refusal nor
// the end) keeps the keys after it held: the person's next keys are
// delayed, never lost. The form tells sooner in every case stepwise knows.
const holdFallback = time.Second

// lostGateFallback is how long a session holds keys after a gate key the
// form never reports as given (the terminal's bytes and the form's parser
// disagreed on what the key was): a last resort, far beyond the time a
// form takes to see a key.
const lostGateFallback = 5 * time.Second

// newTermInput starts reading r (a terminal, or a pipe in tests); restore
// is called by close, after the reader stopped.
func newTermInput(r *os.File, restore func()) *termInput {
	if restore == nil {
		restore = func() {}
	}
	t := &termInput{r: r, done: make(chan struct{}), restore: restore}
	t.cond = sync.NewCond(&t.mu)
	go t.read()
	return t
}

// openTerminalInput reads the terminal f in keysMode until close, through
// a file description of its own where it can (pollableTerminal), so that
// close can stop a read that waits for a key.
func openTerminalInput(f *os.File) (*termInput, error) {
	restore, err := keysMode(f)
	if err != nil {
		return nil, err
	}
	r := pollableTerminal(f)
	return newTermInput(r, func() {
		if r != f {
			r.Close()
		}
		restore()
	}), nil
}

func (t *termInput) read() {
	defer close(t.done)
	b := make([]byte, 1024)
	for {
		n, err := t.r.Read(b)
		t.mu.Lock()
		t.buf = append(t.buf, b[:n]...)
		if err != nil {
			t.err = err
		}
		t.cond.Broadcast()
		t.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// close stops the reader and puts the terminal's mode back. Keys still
// buffered are dropped: nothing asks any more. A reader that cannot be
// interrupted (a terminal read without the poller) is left to the exit.
func (t *termInput) close() {
	t.once.Do(func() {
		if t.r.SetReadDeadline(time.Now()) == nil {
			<-t.done
		}
		t.restore()
	})
}

// gateSet says which keys end a question or move its form to another
// field, so that a session holds what follows them.
type gateSet uint8

const (
	gateEnter gateSet = 1 << iota // Enter (CR)
	gateTab                       // Tab: the next field, when there is one
	gateYesNo                     // y, Y, n, N: a confirmation's answer
)

// session opens the reader of one form.
func (t *termInput) session(g gateSet) *inputSession {
	return &inputSession{in: t, gates: g}
}

// inputSession is the io.Reader of one form (see termInput). Its Read
// never takes a key from the buffer once the session is closed, so a form
// that has ended consumes nothing.
type inputSession struct {
	in     *termInput
	gates  gateSet // guarded by in.mu
	gen    int     // how many gate keys were handed out
	held   bool    // a gate key was handed out and the form has not reacted
	closed bool
}

// Read hands out the buffered keys up to and including the first gate key.
func (s *inputSession) Read(p []byte) (int, error) {
	t := s.in
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		if s.closed {
			return 0, io.EOF
		}
		if !s.held && len(t.buf) > 0 {
			break
		}
		if t.err != nil && len(t.buf) == 0 {
			return 0, io.EOF
		}
		t.cond.Wait()
	}
	n := min(len(p), len(t.buf))
	for i := 0; i < n; i++ {
		if t.scan.gate(t.buf[i], s.gates) {
			n = i + 1
			s.held = true
			s.gen++
			gen := s.gen
			time.AfterFunc(lostGateFallback, func() { s.release(gen, s.gatesNow()) })
			break
		}
	}
	copy(p, t.buf[:n])
	t.buf = t.buf[n:]
	return n, nil
}

func (s *inputSession) gatesNow() gateSet {
	s.in.mu.Lock()
	defer s.in.mu.Unlock()
	return s.gates
}

// heldGen reports which gate key the session holds the keys after, if any.
func (s *inputSession) heldGen() (int, bool) {
	s.in.mu.Lock()
	defer s.in.mu.Unlock()
	return s.gen, s.held && !s.closed
}

// holding reports whether the session holds keys after its gen-th gate key.
func (s *inputSession) holding(gen int) bool {
	s.in.mu.Lock()
	defer s.in.mu.Unlock()
	return s.held && s.gen == gen && !s.closed
}

// release lets keys through again after the gen-th gate key, with the
// gates of the field that now has the focus. A stale release does nothing.
func (s *inputSession) release(gen int, g gateSet) {
	t := s.in
	t.mu.Lock()
	defer t.mu.Unlock()
	if s.closed || !s.held || s.gen != gen {
		return
	}
	s.held, s.gates = false, g
	t.cond.Broadcast()
}

// close ends the session: its Read returns io.EOF and takes nothing more.
func (s *inputSession) close() {
	t := s.in
	t.mu.Lock()
	defer t.mu.Unlock()
	s.closed = true
	t.cond.Broadcast()
}

// keyScanner follows the byte stream well enough to tell a typed gate key
// from the same byte inside an escape sequence (a terminal's reply to a
// query, a function key) or a bracketed paste.
type keyScanner struct {
	state  uint8
	params []byte // of the CSI sequence being read
	paste  bool
}

const (
	scanGround    uint8 = iota
	scanEsc             // after ESC
	scanCSI             // after ESC [
	scanString          // OSC, DCS, APC, PM, SOS: up to BEL or ESC \
	scanStringEsc       // ESC inside such a string
	scanSS3             // after ESC O: one more byte
)

// gate consumes b and reports whether it is a gate key in g.
func (k *keyScanner) gate(b byte, g gateSet) bool {
	switch k.state {
	case scanEsc:
		switch b {
		case '[':
			k.state, k.params = scanCSI, k.params[:0]
		case ']', 'P', '_', '^', 'X':
			k.state = scanString
		case 'O':
			k.state = scanSS3
		case 0x1b:
		default:
			k.state = scanGround
			// ESC then CR is Alt+Enter, or Esc and Enter typed apart
			// (the form's parser decides by time): hold after it too.
			return b == '\r' && g&gateEnter != 0 && !k.paste
		}
		return false
	case scanCSI:
		if b >= 0x40 && b <= 0x7e {
			k.state = scanGround
			if b == '~' {
				switch string(k.params) {
				case "200":
					k.paste = true
				case "201":
					k.paste = false
				}
			}
		} else if len(k.params) < 16 {
			k.params = append(k.params, b)
		}
		return false
	case scanString:
		switch b {
		case 0x07:
			k.state = scanGround
		case 0x1b:
			k.state = scanStringEsc
		}
		return false
	case scanStringEsc:
		if b == '\\' {
			k.state = scanGround
		} else if b != 0x1b {
			k.state = scanString
		}
		return false
	case scanSS3:
		k.state = scanGround
		return false
	}
	if b == 0x1b {
		k.state = scanEsc
		return false
	}
	if k.paste {
		return false
	}
	switch b {
	case '\r':
		return g&gateEnter != 0
	case '\t':
		return g&gateTab != 0
	case 'y', 'Y', 'n', 'N':
		return g&gateYesNo != 0
	}
	return false
}
