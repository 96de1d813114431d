package secret

import (
	"cmp"
	"slices"
	"strings"
	"sync"
)

// Redacted replaces every masked occurrence of a secret.
const Redacted = "***"

// MinMaskLen is the shortest value, in bytes, that a Masker masks. Shorter
// values are ignored by Add (see the package comment).
const MinMaskLen = 3

// Masker is a set of known secret values that it removes from text. The
// zero value is not usable; call NewMasker. A Masker is safe for concurrent
// use, and values added later also apply to later calls on earlier results
// of MaskError.
type Masker struct {
	mu     sync.RWMutex
	set    map[string]struct{}
	values []string // the set, longest first (ties in byte order)
}

// NewMasker returns an empty Masker.
func NewMasker() *Masker {
	return &Masker{set: map[string]struct{}{}}
}

// Add makes the masker mask each value from now on. Values shorter than
// MinMaskLen bytes are ignored; adding a known value again is a no-op.
func (m *Masker) Add(values ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	changed := false
	for _, v := range values {
		if len(v) < MinMaskLen {
			continue
		}
		if _, ok := m.set[v]; ok {
			continue
		}
		m.set[v] = struct{}{}
		m.values = append(m.values, v)
		changed = true
	}
	if changed {
		slices.SortFunc(m.values, func(a, b string) int {
			if c := cmp.Compare(len(b), len(a)); c != 0 {
				return c
			}
			return strings.Compare(a, b)
		})
	}
}

// Len returns the number of values being masked.
func (m *Masker) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.values)
}

// Mask returns s with every occurrence of every known value replaced by
// Redacted. Occurrences that overlap or touch are merged into one Redacted,
// so overlapping secrets (for example "abcd" and "cdef" in "abcdef") are
// hidden entirely rather than leaving part of one behind. The result never
// contains a known value unless that value itself contains '*' (which the
// mask could recreate).
func (m *Masker) Mask(s string) string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.mask(s)
}

// MaskWith masks the given values in s as a Masker holding them would (for
// a message that must not show the credentials of one request).
func MaskWith(s string, values ...string) string {
	if len(values) == 0 {
		return s
	}
	m := NewMasker()
	m.Add(values...)
	return m.mask(s)
}

// MaskStream masks s, a piece of a stream that goes on (a long line cut in
// pieces): it returns the masked text that may be let go now, and the raw
// tail to hold back and put before the next piece — the longest end of s
// that a secret could begin in and finish in what follows. An occurrence
// never straddles the two. At the end of the stream, Mask the tail.
func (m *Masker) MaskStream(s string) (masked, tail string) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	cut := len(s)
	for _, v := range m.values {
		// The earliest start of an end of s that v begins with.
		for p := max(0, len(s)-len(v)+1); p < cut; p++ {
			i := strings.IndexByte(s[p:cut], v[0])
			if i < 0 {
				break
			}
			p += i
			if strings.HasPrefix(v, s[p:]) {
				cut = p
				break
			}
		}
	}
	// Hidden text that crosses the cut (occurrences that overlap or touch,
	// as Mask joins them) moves it to where that text starts.
	hidden := m.hidden(s)
	for _, h := range hidden {
		if h.start < cut && cut < h.end {
			cut = h.start
			break
		}
	}
	if len(s)-cut > maxHeld {
		// A run of overlapping occurrences this long (a secret like
		// "aaa" in a long line of a's) is masked in pieces rather than
		// held, so that memory and time stay bounded.
		return render(s, hidden), ""
	}
	// The ranges before the cut are those of s[:cut]: none crosses it.
	n := 0
	for n < len(hidden) && hidden[n].end <= cut {
		n++
	}
	return render(s[:cut], hidden[:n]), s[cut:]
}

// maxHeld bounds the text MaskStream holds back: a secret longer than it
// may show across two pieces.
const maxHeld = 16 << 10 // more than the longest usual secret (a PEM key is 2–4 KB)

// mask is Mask for a caller that holds m.mu.
func (m *Masker) mask(s string) string { return render(s, m.hidden(s)) }

// render is s with each hidden range replaced by Redacted.
func render(s string, hidden []span) string {
	if len(hidden) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	pos := 0 // s[:pos] has been written
	for _, h := range hidden {
		b.WriteString(s[pos:h.start])
		b.WriteString(Redacted)
		pos = h.end
	}
	b.WriteString(s[pos:])
	return b.String()
}

// hidden returns the byte ranges of s that Mask replaces, in order: every
// occurrence of every value, those that overlap or touch joined.
func (m *Masker) hidden(s string) []span {
	if len(m.values) == 0 || len(s) < MinMaskLen {
		return nil
	}
	var spans []span
	for _, v := range m.values { // longest first: the longest match at a position is found first
		if len(v) > len(s) {
			continue
		}
		for off := 0; ; {
			i := strings.Index(s[off:], v)
			if i < 0 {
				break
			}
			start := off + i
			spans = append(spans, span{start, start + len(v)})
			off = start + 1 // overlapping occurrences of one value ("aaa" in "aaaa") too
		}
	}
	if len(spans) == 0 {
		return nil
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	joined := spans[:0] // in place: each joined span ends before the next unread one starts
	for i := 0; i < len(spans); {
		start, end := spans[i].start, spans[i].end
		for i++; i < len(spans) && spans[i].start <= end; i++ {
			end = max(end, spans[i].end)
		}
		joined = append(joined, span{start, end})
	}
	return joined
}

// span is the byte range [start, end) of one occurrence.
type span struct{ start, end int }
