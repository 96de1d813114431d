package action

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"stepwise.dev/stepwise/internal/secret"
)

// httpExcerptBytes bounds the response body quoted in an error.
const httpExcerptBytes = 300

// statusError is the error of a status outside `expect` (retryable as
// HTTPRetry says).
func (p *httpInput) statusError(resp *http.Response, head []byte, now time.Time) error {
	code := resp.StatusCode
	msg := "status " + strconv.Itoa(code)
	if t := http.StatusText(code); t != "" {
		msg += " " + t
	}
	msg += " (expected " + p.expect.String() + ")"
	retryable, after := HTTPRetry(resp, now)
	msg += RetryNote(after)
	// A read limit may split the last character: drop its start.
	more := len(head) >= p.excerptRead()
	if i := len(head) - 1; more {
		for i > 0 && !utf8.RuneStart(head[i]) {
			i--
		}
		if !utf8.FullRune(head[i:]) {
			head = head[:i]
		}
	}
	ex := excerpt(scrubbed(string(head), p.secrets), more)
	if ex != "" {
		msg += ": " + ex
	}
	err := p.fail(retryable, after, "%s", msg).(*Error)
	err.HTTPStatus, err.ResponseBody = code, ex
	return err
}

// excerptRead is how much of an unexpected response to read for its
// excerpt: enough that folding whitespace and scrubbing secrets still
// leave a full excerpt.
func (p *httpInput) excerptRead() int {
	longest := 0
	for _, s := range p.secrets {
		longest = max(longest, len(s))
	}
	return 2*httpExcerptBytes + longest
}

// HTTPRetry says whether a response's status is worth another try — 408,
// 429 and 5xx: the server is busy, down or slow; any other status will be
// the same next time — and then the wait its Retry-After asks for at now.
// Actions that call HTTP APIs put them in Error.Retryable and RetryAfter.
func HTTPRetry(resp *http.Response, now time.Time) (retryable bool, after time.Duration) {
	code := resp.StatusCode
	if code != http.StatusRequestTimeout && code != http.StatusTooManyRequests && code < 500 {
		return false, 0
	}
	return true, retryAfter(resp.Header, now)
}

// RetryNote is what an error message says of the wait a server asked for
// ("" for none).
func RetryNote(after time.Duration) string {
	if after <= 0 {
		return ""
	}
	return "; the server asks to retry after " + after.String()
}

// retryAfter reads Retry-After (seconds or an HTTP date) as the wait it
// asks for at now; zero when it asks for none.
func retryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(v); err == nil {
		return time.Duration(max(secs, 0)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now).Round(time.Second)
	}
	return 0
}

// excerpt is the start of a body for a message: valid UTF-8, whitespace
// runs folded to one space, at most httpExcerptBytes bytes, ending in …
// when there is more.
func excerpt(s string, more bool) string {
	s = strings.Join(strings.Fields(strings.ToValidUTF8(s, "\uFFFD")), " ")
	if len(s) <= httpExcerptBytes && !more {
		return s
	}
	if len(s) <= httpExcerptBytes-len("…") {
		return s + "…"
	}
	cut := httpExcerptBytes - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// sensitiveName reports whether a header or query parameter carries a
// credential, by its name: its value never appears in a message, and it
// does not follow a redirect to another host.
func sensitiveName(name string) bool {
	n := strings.ToLower(name)
	switch n {
	case "authorization", "proxy-authorization", "cookie", "set-cookie":
		return true
	case "idempotency-key":
		return false // the engine's run/step key: no secret
	}
	for _, w := range []string{"token", "secret", "key", "password", "passwd", "auth", "signature", "credential", "session"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// secretParts are the pieces of a credential header value that a server
// might echo on their own: the whole value, the credentials after an
// auth scheme ("Bearer xyz"), each cookie's value.
func secretParts(v string) []string {
	parts := []string{v}
	if _, cred, ok := strings.Cut(v, " "); ok {
		parts = append(parts, strings.TrimSpace(cred))
	}
	for _, c := range strings.Split(v, ";") {
		if _, val, ok := strings.Cut(c, "="); ok {
			parts = append(parts, strings.TrimSpace(val))
		}
	}
	return parts
}

// scrubbed replaces every secret of the request in s by *** (as the run's
// masker does: values from secret.MinMaskLen bytes, overlapping ones hidden
// whole).
func scrubbed(s string, secrets []string) string { return secret.MaskWith(s, secrets...) }

// redactURL is a URL for messages: user info and the values of
// credential-like query parameters as ***, no fragment; the rest of the
// query as written.
func redactURL(u *url.URL) string {
	c := *u
	c.Fragment, c.RawFragment = "", ""
	c.User = nil // put back as *** below: url.User would escape the stars
	if c.RawQuery != "" {
		parts := strings.Split(c.RawQuery, "&")
		for i, part := range parts {
			k, _, hasValue := strings.Cut(part, "=")
			if name, err := url.QueryUnescape(k); err == nil && hasValue && sensitiveName(name) {
				parts[i] = k + "=***"
			}
		}
		c.RawQuery = strings.Join(parts, "&")
	}
	if u.User != nil {
		return c.Scheme + "://***@" + strings.TrimPrefix(c.String(), c.Scheme+"://")
	}
	return c.String()
}

// isCertificateError reports a TLS verification failure: a retry meets
// the same certificate.
func isCertificateError(err error) bool {
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		verify   *tls.CertificateVerificationError
	)
	return errors.As(err, &unknown) || errors.As(err, &hostname) || errors.As(err, &invalid) || errors.As(err, &verify)
}
