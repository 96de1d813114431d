package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"stepwise.dev/stepwise/internal/action"
)

// request builds the operation's HTTP request from a call's input (which
// the registry has checked against the input schema). The query is
// returned apart so that credentials can still be added to it.
func (a *operationAction) request(ctx context.Context, call action.Call) (*http.Request, url.Values, error) {
	in := call.Input
	path := a.op.Path
	for _, p := range a.op.Params {
		if p.In != "path" {
			continue
		}
		v, ok := in[p.Key]
		if !ok {
			return nil, nil, fmt.Errorf("path parameter %s is missing", p.Key)
		}
		// Escaped: a value is one segment, whatever slashes it holds.
		path = strings.ReplaceAll(path, "{"+p.Name+"}", url.PathEscape(text(v, ",")))
	}
	u, err := url.Parse(a.cat.BaseURL + path)
	if err != nil {
		return nil, nil, fmt.Errorf("the URL of %s %s: %w", a.op.Method, a.op.Path, err)
	}
	query := u.Query()
	u.RawQuery = ""

	body, contentType, err := a.body(in)
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, a.op.Method, u.String(), body)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", a.op.Method, a.op.Path, err)
	}
	req.Header.Set("Accept", "application/json, */*;q=0.5")
	req.Header.Set("User-Agent", "stepwise")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	// POST and PATCH are not idempotent in HTTP: the key lets a server that
	// supports it recognize the same attempt re-run after a crash. A header
	// parameter of that name in the input wins.
	if (a.op.Method == http.MethodPost || a.op.Method == http.MethodPatch) && call.IdempotencyKey != "" {
		req.Header.Set("Idempotency-Key", call.IdempotencyKey)
	}
	for _, p := range a.op.Params {
		v, ok := in[p.Key]
		if !ok || v == nil {
			continue
		}
		switch p.In {
		case "query":
			addQuery(query, p, v)
		case "header":
			req.Header.Set(p.Name, text(v, ","))
		}
	}
	return req, query, nil
}

// body encodes the input's body as the operation's media type.
func (a *operationAction) body(in map[string]any) (io.Reader, string, error) {
	v, ok := in[bodyKey]
	if a.op.Body == nil || !ok {
		return nil, "", nil
	}
	mt := a.op.Body.MediaType
	base, _, _ := mime.ParseMediaType(mt)
	if base == "application/x-www-form-urlencoded" {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, "", fmt.Errorf("body: a form body is an object, not %T", v)
		}
		form := url.Values{}
		for _, k := range sortedKeys(obj) {
			addValues(form, k, obj[k], true)
		}
		return strings.NewReader(form.Encode()), mt, nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, "", fmt.Errorf("body: %w", err)
	}
	if base == "*/*" || base == "application/*" {
		mt = "application/json"
	}
	return bytes.NewReader(data), mt, nil
}

// addQuery adds one query parameter in the form style: an array as
// repeated keys (explode) or one comma-separated value; an object's
// properties as keys of their own (explode) or name=k,v,….
func addQuery(q url.Values, p Param, v any) {
	if obj, ok := v.(map[string]any); ok {
		if p.Explode {
			for _, k := range sortedKeys(obj) {
				addValues(q, k, obj[k], true)
			}
			return
		}
		var parts []string
		for _, k := range sortedKeys(obj) {
			parts = append(parts, k, text(obj[k], ","))
		}
		q.Add(p.Name, strings.Join(parts, ","))
		return
	}
	addValues(q, p.Name, v, p.Explode)
}

// addValues adds name=v; a list as repeated names (explode) or joined.
func addValues(q url.Values, name string, v any, explode bool) {
	if list, ok := v.([]any); ok && explode {
		for _, x := range list {
			q.Add(name, text(x, ","))
		}
		return
	}
	q.Add(name, text(v, ","))
}

// text is a value as a parameter's text: scalars as written, lists joined
// by sep, objects as JSON.
func text(v any, sep string) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'f', -1, 32)
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, json.Number:
		return fmt.Sprint(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = text(e, sep)
		}
		return strings.Join(parts, sep)
	case []string:
		return strings.Join(x, sep)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}
