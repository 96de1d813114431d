package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/secret"
)

// maxResponseSize bounds the response body an operation reads.
const maxResponseSize = 16 << 20

// DefaultTimeout bounds a call whose step sets no timeout: an API that
// never answers must not hold a run forever.
const DefaultTimeout = 60 * time.Second

// Runtime is what operations need to run.
type Runtime struct {
	// Client sends the requests (nil: http.DefaultClient). The step's
	// timeout, else DefaultTimeout, bounds each call; redirects are
	// followed within the API's origin only, whatever the client says. A
	// server's client connects through its action.NetworkPolicy: a
	// refused address fails the step with NETWORK_NOT_ALLOWED.
	Client *http.Client
	// LookupEnv resolves credentials' $NAME references (nil: os.LookupEnv).
	LookupEnv func(string) (string, bool)
}

// Actions returns an action per operation of c.
func (c *Catalog) Actions(rt Runtime) []action.Action {
	base := rt.Client
	if base == nil {
		base = http.DefaultClient
	}
	// Credentials in headers of our own (X-API-Key…) would follow a
	// redirect to any host: only redirects within the origin are taken,
	// another is answered as the 3xx it is.
	client := *base
	client.CheckRedirect = sameOrigin
	rt.Client = &client
	if rt.LookupEnv == nil {
		rt.LookupEnv = os.LookupEnv
	}
	out := make([]action.Action, len(c.Operations))
	for i := range c.Operations {
		out[i] = &operationAction{cat: c, op: &c.Operations[i], rt: rt}
	}
	return out
}

// ActionNames lists the names of c's actions.
func (c *Catalog) ActionNames() []string {
	out := make([]string, len(c.Operations))
	for i := range c.Operations {
		out[i] = c.ActionName(&c.Operations[i])
	}
	return out
}

// operationAction is one operation as an action. The catalog it points to
// is never changed after it is built: a catalog changed on disk is
// registered again as new actions.
type operationAction struct {
	cat *Catalog
	op  *Operation
	rt  Runtime
}

// Name implements action.Action.
func (a *operationAction) Name() string { return a.cat.ActionName(a.op) }

// Safety implements action.Action.
func (a *operationAction) Safety() string { return a.op.Safety }

// Description implements action.Action: the summary and description, then
// the call it makes.
func (a *operationAction) Description() string {
	var parts []string
	for _, s := range []string{a.op.Summary, a.op.Description} {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(parts, s) {
			parts = append(parts, s)
		}
	}
	call := fmt.Sprintf("%s: %s %s", a.cat.Title, a.op.Method, a.op.Path)
	if a.op.Deprecated {
		call += " (deprecated)"
	}
	return strings.Join(append(parts, call), "\n\n")
}

// InputSchema implements action.Described.
func (a *operationAction) InputSchema() map[string]any { return a.op.InputSchema }

// OutputSchema implements action.Described.
func (a *operationAction) OutputSchema() map[string]any { return a.op.OutputSchema }

// Run sends the operation's request and returns the response body (JSON
// decoded, else text; nil when empty). A status outside 2xx is an error,
// retryable for 429 and 5xx.
func (a *operationAction) Run(ctx context.Context, call action.Call) (any, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	req, query, err := a.request(ctx, call)
	if err != nil {
		return nil, &action.Error{Err: fmt.Errorf("%s: %w", a.Name(), err)}
	}
	secrets, missing, err := a.cat.applyAuth(a.op, req, query, a.rt.LookupEnv)
	if err != nil {
		return nil, &action.Error{Err: fmt.Errorf("%s: %w", a.Name(), err)}
	}
	req.URL.RawQuery = query.Encode()
	what := a.op.Method + " " + a.op.Path
	if call.Logger != nil {
		call.Logger.Debug("catalog request", "action", a.Name(), "method", a.op.Method, "path", req.URL.EscapedPath())
	}
	resp, err := a.rt.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// The URL may carry an API key in its query: say what failed
		// without it.
		var refusal *action.NetworkRefusal
		if errors.As(err, &refusal) {
			// The server may not connect there: no retry will.
			return nil, &action.Error{Err: fmt.Errorf("%s: %s: %w", a.Name(), what, refusal), Code: action.CodeNetworkNotAllowed}
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, &action.Error{Err: fmt.Errorf("%s: %s: %s", a.Name(), what, masked(err.Error(), secrets)), Retryable: true}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseSize+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &action.Error{Err: fmt.Errorf("%s: %s: reading the response: %s", a.Name(), what, masked(err.Error(), secrets)), Retryable: true}
	}
	if len(body) > maxResponseSize {
		return nil, &action.Error{Err: fmt.Errorf("%s: %s: the response is larger than %d bytes", a.Name(), what, maxResponseSize)}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, statusError(a.Name(), what, resp, body, secrets, missing)
	}
	return decodeBody(resp.Header.Get("Content-Type"), body), nil
}

// sameOrigin follows up to 10 redirects that stay on the scheme and host
// of the first request.
func sameOrigin(req *http.Request, via []*http.Request) error {
	first := via[0].URL
	if len(via) >= 10 || req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		return http.ErrUseLastResponse
	}
	return nil
}

// statusError is the action error of a response outside 2xx: the status,
// the start of the body (secrets masked) and a hint when credentials the
// operation accepts were not configured.
func statusError(name, what string, resp *http.Response, body []byte, secrets, missing []string) error {
	msg := fmt.Sprintf("%s: %s: %s", name, what, resp.Status)
	snippet := strings.TrimSpace(string(body))
	if snippet != "" {
		if len(snippet) > 512 {
			snippet = strings.ToValidUTF8(snippet[:512], "") + "…"
		}
		snippet = masked(snippet, secrets)
		msg += ": " + snippet
	}
	if (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) && len(missing) > 0 {
		msg += fmt.Sprintf(" (the catalog has no credentials for %s: import it again with auth)", strings.Join(missing, ", "))
	}
	retryable, after := action.HTTPRetry(resp, time.Now()) // as the http action
	msg += action.RetryNote(after)
	return &action.Error{Err: errors.New(msg), Retryable: retryable, RetryAfter: after, HTTPStatus: resp.StatusCode, ResponseBody: snippet}
}

// decodeBody is the action's output: JSON decoded, other text as a string.
func decodeBody(contentType string, body []byte) any {
	if len(body) == 0 {
		return nil
	}
	base, _, _ := mime.ParseMediaType(contentType)
	if base == "" || isJSON(base) {
		var v any
		if err := json.Unmarshal(body, &v); err == nil {
			return v
		}
	}
	return string(body)
}

// masked removes the secret values of a call from a message.
func masked(msg string, secrets []string) string { return secret.MaskWith(msg, secrets...) }
