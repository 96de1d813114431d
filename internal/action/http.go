package action

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// HTTP calls an HTTP or HTTPS endpoint. with: {method, url, headers,
// query, body | body_text | form, timeout, expect, parse,
// max_response_bytes, follow_redirects, idempotency} (see InputSchema and
// docs/ACTIONS.md). Output: {status, headers, body, url}.
//
// A status outside `expect` fails the step; 408, 429 and 5xx answers and
// network failures are retryable, other statuses are not. Messages name
// the method and the URL with credentials redacted, never a request
// header's value.
type HTTP struct {
	// Transport sends the requests; nil means http.DefaultTransport
	// (proxies from the environment, shared keep-alive connections). A
	// server gives it its NetworkPolicy's Transport, which refuses
	// connections to addresses the policy does not allow
	// (NETWORK_NOT_ALLOWED, not retryable).
	Transport http.RoundTripper
}

// Name implements Action.
func (HTTP) Name() string { return "http" }

// Description implements Action.
func (HTTP) Description() string {
	return "Call an HTTP(S) endpoint. with: {method?: GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS, url, headers?, query?, " +
		"body? (JSON) | body_text? | form?, timeout? (default 30s), expect? (default [2xx]), parse?: auto|json|text, " +
		"max_response_bytes? (default 10 MiB), follow_redirects? (default true), idempotency? (default true)}. " +
		"Output: {status, headers, body, url}. 408, 429, 5xx and network errors are retryable."
}

// Safety implements Action: a request may change anything on the other
// side.
func (HTTP) Safety() string { return Mutating }

// Run implements Action.
func (h HTTP) Run(ctx context.Context, c Call) (any, error) {
	in, _ := toJSONModel(c.Input).(map[string]any)
	p, err := parseHTTPInput(in)
	if err != nil {
		return nil, err
	}
	// The step's context (its timeout, the run's cancellation) still
	// bounds the call; this is the action's own, tighter limit.
	callCtx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	req, err := p.request(callCtx, c.IdempotencyKey)
	if err != nil {
		return nil, err
	}
	transport := h.Transport
	if transport == nil {
		transport = http.DefaultTransport
	}
	client := &http.Client{Transport: transport, CheckRedirect: p.checkRedirect}
	started := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return nil, p.transportError(ctx, callCtx, err)
	}
	defer resp.Body.Close()
	if c.Logger != nil {
		c.Logger.Debug("http", "method", p.method, "url", redactURL(p.url), "status", resp.StatusCode,
			"ms", time.Since(started).Milliseconds())
	}
	if !p.expect.has(resp.StatusCode) {
		head, _ := io.ReadAll(io.LimitReader(resp.Body, int64(p.excerptRead())))
		return nil, p.statusError(resp, head, time.Now())
	}
	// A HEAD answer announces the length of a body it does not send.
	if p.method != "HEAD" && resp.ContentLength > p.maxBytes {
		return nil, p.tooLarge()
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, p.maxBytes+1))
	if err != nil {
		return nil, p.transportError(ctx, callCtx, err)
	}
	if int64(len(data)) > p.maxBytes {
		return nil, p.tooLarge() // an error, not a truncated body that looks whole
	}
	body, err := p.decode(resp.Header.Get("Content-Type"), data)
	if err != nil {
		return nil, err
	}
	final := *resp.Request.URL
	final.User = nil // user:password@ went out as Authorization; it is no output
	return map[string]any{
		"status":  resp.StatusCode,
		"headers": headerData(resp.Header),
		"body":    body,
		"url":     final.String(),
	}, nil
}

// checkRedirect follows at most httpMaxRedirects redirects, or none.
func (p *httpInput) checkRedirect(req *http.Request, via []*http.Request) error {
	if !p.follow {
		return http.ErrUseLastResponse
	}
	if len(via) >= httpMaxRedirects {
		return errTooManyRedirects
	}
	// net/http drops Authorization and Cookie when the host changes, but
	// forwards other headers; an X-Api-Key must not reach another host
	// either.
	if req.URL.Hostname() != via[0].URL.Hostname() {
		for name := range req.Header {
			if sensitiveName(name) {
				req.Header.Del(name)
			}
		}
	}
	return nil
}

var errTooManyRedirects = fmt.Errorf("stopped after %d redirects", httpMaxRedirects)

// decode turns the response body into output data as `parse` says.
func (p *httpInput) decode(contentType string, data []byte) (any, error) {
	asJSON := p.parse == "json"
	if p.parse == "auto" {
		mt, _, _ := mime.ParseMediaType(contentType)
		asJSON = mt == "application/json" || strings.HasSuffix(mt, "+json")
	}
	if !asJSON {
		return strings.ToValidUTF8(string(data), "\uFFFD"), nil
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, nil // 204 and friends: no content is null
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		hint := ""
		if p.parse == "auto" {
			hint = " (the server said " + contentType + "; use parse: text to take it as text)"
		}
		return nil, p.fail(false, 0, "the response is not JSON: %v%s", err, hint)
	}
	return v, nil
}

// headerData is the response headers as output: canonical names, a
// string for one value, a list for several.
func headerData(h http.Header) map[string]any {
	out := make(map[string]any, len(h))
	for name, vs := range h {
		name = http.CanonicalHeaderKey(name)
		if len(vs) == 1 {
			out[name] = vs[0]
			continue
		}
		list := make([]any, len(vs))
		for i, v := range vs {
			list[i] = v
		}
		out[name] = list
	}
	return out
}

// transportError is a failure without a status: the network, a timeout,
// TLS, too many redirects.
func (p *httpInput) transportError(stepCtx, callCtx context.Context, err error) error {
	if stepCtx.Err() != nil {
		// The step's timeout or the run's cancellation: the engine says
		// which, and decides about retries.
		return fmt.Errorf("%s %s: %w", p.method, redactURL(p.url), stepCtx.Err())
	}
	// net/http's url.Error repeats the whole URL, query secrets and all.
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var refusal *NetworkRefusal
	switch {
	case errors.As(err, &refusal):
		// No retry reaches an address the server does not connect to.
		what := scrubbed(fmt.Sprintf("http: %s %s", p.method, redactURL(p.url)), p.secrets)
		return &Error{Err: fmt.Errorf("%s: %w", what, refusal), Code: CodeNetworkNotAllowed}
	case callCtx.Err() != nil, errors.Is(err, context.DeadlineExceeded):
		return p.fail(true, 0, "no response within %s (with.timeout)", p.timeout)
	case errors.Is(err, errTooManyRedirects):
		return p.fail(false, 0, "%v", err)
	case isCertificateError(err):
		return p.fail(false, 0, "%v", err)
	}
	return p.fail(true, 0, "%v", err)
}

// tooLarge is the error of a response over max_response_bytes.
func (p *httpInput) tooLarge() error {
	return p.fail(false, 0, "the response is larger than max_response_bytes (%d bytes)", p.maxBytes)
}

// fail makes an action error naming the request, with secrets scrubbed.
func (p *httpInput) fail(retryable bool, after time.Duration, format string, args ...any) error {
	msg := fmt.Sprintf("http: %s %s: %s", p.method, redactURL(p.url), fmt.Sprintf(format, args...))
	return &Error{Err: errors.New(scrubbed(msg, p.secrets)), Retryable: retryable, RetryAfter: after}
}
