package mcpserver

import (
	"bytes"
	"net/http"
	"sync"
)

// sseStream is one HTTP response carrying server-sent events: a POST's, to
// which the answers of its calls go (and what the server sends during
// them), or the session's GET stream. Events are written by whichever
// goroutine the server writes from; the request's goroutine ends the
// stream (end) before it returns, after which nothing more is written.
type sseStream struct {
	mu       sync.Mutex
	w        http.ResponseWriter
	rc       *http.ResponseController
	left     int           // answers still owed (a POST's stream)
	done     chan struct{} // closed when none is owed any more
	finished bool          // done is closed
	ended    bool          // the request is over, or writing failed
}

func newSSEStream(w http.ResponseWriter, answers int) *sseStream {
	return &sseStream{w: w, rc: http.NewResponseController(w), left: answers, done: make(chan struct{})}
}

// sseHeaders marks a response as a stream of server-sent events.
func sseHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
}

// open sends the headers at once (a GET stream has nothing to say yet).
func (st *sseStream) open() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.ended {
		st.w.WriteHeader(http.StatusOK)
		if st.rc.Flush() != nil {
			st.ended = true
		}
	}
}

// send writes one message as an event and flushes it; an answer counts
// against the answers owed.
func (st *sseStream) send(data []byte, answer bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.ended {
		if _, err := st.w.Write(sseEvent(data)); err != nil || st.rc.Flush() != nil {
			st.ended = true
		}
	}
	if answer {
		st.left--
		if st.left <= 0 && !st.finished {
			st.finished = true
			close(st.done)
		}
	}
}

// end marks the request over: later sends write nothing.
func (st *sseStream) end() {
	st.mu.Lock()
	st.ended = true
	st.mu.Unlock()
}

// sseEvent frames a message as a server-sent event. A JSON message has
// line ends only between its tokens, if anywhere: each line becomes a data
// line, and the client joins them with line ends again.
func sseEvent(data []byte) []byte {
	var b bytes.Buffer
	b.Grow(len(data) + 24)
	b.WriteString("event: message\n")
	if bytes.ContainsAny(data, "\r\n") {
		data = bytes.ReplaceAll(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n")), []byte("\r"), []byte("\n"))
		for _, line := range bytes.Split(data, []byte("\n")) {
			b.WriteString("data: ")
			b.Write(line)
			b.WriteByte('\n')
		}
	} else {
		b.WriteString("data: ")
		b.Write(data)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	return b.Bytes()
}
