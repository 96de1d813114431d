package web

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Session cookie and form field names.
const (
	cookieName = "stepwise_session"
	csrfField  = "csrf"
)

// session is a signed-in browser: its CSRF token and when it ends.
type session struct {
	csrf    string
	expires time.Time
}

// sessions are kept server-side, bounded: the oldest goes when full.
type sessions struct {
	mu    sync.Mutex
	ttl   time.Duration
	max   int
	byID  map[string]*session
	order []string // ids, oldest first
	now   func() time.Time
}

func newSessions(ttl time.Duration, max int, now func() time.Time) *sessions {
	return &sessions{ttl: ttl, max: max, byID: map[string]*session{}, now: now}
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// create opens a session and returns its id.
func (s *sessions) create() (string, *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	// Expired ones go first, then the oldest while over the bound.
	kept := s.order[:0]
	for _, id := range s.order {
		if ss, ok := s.byID[id]; ok && ss.expires.After(now) {
			kept = append(kept, id)
		} else {
			delete(s.byID, id)
		}
	}
	s.order = kept
	for len(s.order) >= s.max {
		delete(s.byID, s.order[0])
		s.order = s.order[1:]
	}
	id := randomToken()
	ss := &session{csrf: randomToken(), expires: now.Add(s.ttl)}
	s.byID[id] = ss
	s.order = append(s.order, id)
	return id, ss
}

// get returns the live session of id, or nil.
func (s *sessions) get(id string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.byID[id]
	if !ok {
		return nil
	}
	if !ss.expires.After(s.now()) {
		delete(s.byID, id)
		return nil
	}
	return ss
}

// end closes a session.
func (s *sessions) end(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byID, id)
}

// tokenOK says whether t is one of the configured tokens (constant time
// over the digests).
func (h *Handler) tokenOK(t string) bool {
	if t == "" {
		return false
	}
	d := sha256.Sum256([]byte(t))
	ok := 0
	for _, want := range h.tokens {
		ok |= subtle.ConstantTimeCompare(d[:], want[:])
	}
	return ok == 1
}

// caller is who a request comes from.
type caller struct {
	bearer bool     // authenticated by an Authorization header: no CSRF token needed
	sess   *session // the browser session, when there is one
}

// identify authenticates r; ok is false for an anonymous visitor.
func (h *Handler) identify(w http.ResponseWriter, r *http.Request) (caller, bool) {
	if a := r.Header.Get("Authorization"); a != "" {
		t, found := strings.CutPrefix(a, "Bearer ")
		return caller{bearer: true}, found && h.tokenOK(strings.TrimSpace(t))
	}
	if c, err := r.Cookie(cookieName); err == nil {
		if ss := h.sessions.get(c.Value); ss != nil {
			return caller{sess: ss}, true
		}
	}
	if len(h.tokens) > 0 {
		return caller{}, false
	}
	// No tokens (loopback only): every visitor gets a session, for its
	// CSRF token.
	id, ss := h.sessions.create()
	h.setCookie(w, id, h.opts.SessionTTL)
	return caller{sess: ss}, true
}

func (h *Handler) setCookie(w http.ResponseWriter, value string, ttl time.Duration) {
	c := &http.Cookie{Name: cookieName, Value: value, Path: "/", HttpOnly: true, Secure: h.opts.Secure,
		SameSite: http.SameSiteStrictMode, MaxAge: int(ttl / time.Second)}
	if ttl <= 0 {
		c.MaxAge = -1
	}
	http.SetCookie(w, c)
}

// checkPost refuses a POST from another site or without the session's
// CSRF token; it reports whether the request may go on.
func (h *Handler) checkPost(w http.ResponseWriter, r *http.Request, c caller) bool {
	if !h.sameOrigin(r) {
		h.forbidden(w, r, "the form was sent from another site")
		return false
	}
	if c.bearer {
		return true // a browser never adds an Authorization header by itself
	}
	got := r.PostFormValue(csrfField)
	if c.sess == nil || got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(c.sess.csrf)) != 1 {
		h.forbidden(w, r, "the form is stale or was not sent from this dashboard; reload the page and try again")
		return false
	}
	return true
}

// sameOrigin accepts a request whose Origin (or, without one,
// Sec-Fetch-Site) says it comes from this site.
func (h *Handler) sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || o == "null" {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	if base, err := url.Parse(h.opts.BaseURL); err == nil && h.opts.BaseURL != "" && strings.EqualFold(base.Host, u.Host) {
		return true
	}
	return false
}

func (h *Handler) forbidden(w http.ResponseWriter, r *http.Request, why string) {
	w.WriteHeader(http.StatusForbidden)
	h.render(w, r, "error", pageData{Title: "Refused", Message: "Refused: " + why + "."})
}

// login serves /login: the form, and the token traded for a session.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.FormValue("next"))
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if len(h.tokens) == 0 {
			http.Redirect(w, r, next, http.StatusSeeOther)
			return
		}
		h.render(w, r, "login", pageData{Title: "Sign in", Next: next})
	case http.MethodPost:
		if !h.sameOrigin(r) {
			h.forbidden(w, r, "the form was sent from another site")
			return
		}
		if !h.tokenOK(r.PostFormValue("token")) {
			w.WriteHeader(http.StatusUnauthorized)
			h.render(w, r, "login", pageData{Title: "Sign in", Next: next, Message: "That token is not accepted."})
			return
		}
		id, _ := h.sessions.create()
		h.setCookie(w, id, h.opts.SessionTTL)
		http.Redirect(w, r, next, http.StatusSeeOther)
	default:
		w.Header().Set("Allow", "GET, POST")
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

// logout serves POST /logout.
func (h *Handler) logout(w http.ResponseWriter, r *http.Request, c caller) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	if !h.checkPost(w, r, c) {
		return
	}
	if ck, err := r.Cookie(cookieName); err == nil {
		h.sessions.end(ck.Value)
	}
	h.setCookie(w, "", 0)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// safeNext keeps a redirect target on this site.
func safeNext(next string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return "/runs"
	}
	return next
}
