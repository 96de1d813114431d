package action

// The schemas of the http action. docs/ACTIONS.md shows InputSchema as
// generated JSON; TestActionsDocShowsTheSchemas keeps the two equal.

// InputSchema implements Described.
func (HTTP) InputSchema() map[string]any {
	scalar := []any{"string", "number", "boolean"}
	param := map[string]any{
		"type":  []any{"string", "number", "boolean", "null", "array"},
		"items": map[string]any{"type": scalar},
	}
	methods := make([]any, len(httpMethods))
	for i, m := range httpMethods {
		methods[i] = m
	}
	return closedObject([]string{"url"}, map[string]any{
		"method": map[string]any{"type": "string", "enum": methods, "default": "GET"},
		"url": map[string]any{"type": "string", "pattern": "^[hH][tT][tT][pP][sS]?://",
			"description": "an http:// or https:// URL; its own query is kept and `query` is added to it"},
		"headers": map[string]any{"type": "object", "additionalProperties": map[string]any{"type": scalar},
			"description": "request headers; values of credential headers never appear in messages"},
		"query": map[string]any{"type": "object", "additionalProperties": param,
			"description": "query parameters: a list repeats the name, null leaves it out"},
		"body": map[string]any{
			"description": "a JSON value sent as application/json (at most one of body, body_text, form)"},
		"body_text": map[string]any{"type": "string", "description": "a text body (text/plain unless headers say otherwise)"},
		"form": map[string]any{"type": "object", "additionalProperties": param,
			"description": "fields sent as application/x-www-form-urlencoded"},
		"timeout": map[string]any{"type": "string", "default": "30s",
			"description": "the longest wait for the whole response, e.g. 10s; the step's timeout applies too"},
		"expect": map[string]any{"type": "array", "minItems": 1, "items": map[string]any{
			"anyOf": []any{
				map[string]any{"type": "integer", "minimum": 100, "maximum": 599},
				map[string]any{"type": "string", "pattern": "^([1-5]xx|[1-5][0-9][0-9](-[1-5][0-9][0-9])?)$"},
			}},
			"description": "statuses that succeed: codes, classes (2xx) or ranges (200-204); default [2xx], and 3xx too when follow_redirects is false"},
		"parse": map[string]any{"type": "string", "enum": []any{"auto", "json", "text"}, "default": "auto",
			"description": "auto parses JSON when Content-Type says JSON (application/json or +json), text otherwise"},
		"max_response_bytes": map[string]any{"type": "integer", "minimum": 1, "maximum": httpMaxMaxBytes, "default": httpDefaultMaxBytes,
			"description": "a larger response fails the step"},
		"follow_redirects": map[string]any{"type": "boolean", "default": true,
			"description": "follow up to 10 redirects; false returns the 3xx as the response"},
		"idempotency": map[string]any{"type": "boolean", "default": true,
			"description": "send the engine's Idempotency-Key (the same for every retry of the step) with methods other than GET and HEAD"},
	})
}

// OutputSchema implements Described.
func (HTTP) OutputSchema() map[string]any {
	return closedObject([]string{"status", "headers", "body", "url"}, map[string]any{
		"status": map[string]any{"type": "integer"},
		"headers": map[string]any{"type": "object", "additionalProperties": map[string]any{
			"type": []any{"string", "array"}, "items": map[string]any{"type": "string"}},
			"description": "canonical header names; one value as a string, several as a list"},
		"body": map[string]any{"description": "parsed JSON, text, or null for an empty JSON response"},
		"url":  map[string]any{"type": "string", "description": "the final URL, after redirects"},
	})
}
