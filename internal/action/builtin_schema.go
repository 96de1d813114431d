package action

// The schemas of the built-in actions: closed objects, so that a
// misspelled `with` key is caught when the workflow is validated.

// InputSchema implements Described.
func (Log) InputSchema() map[string]any {
	return closedObject([]string{"message"}, map[string]any{
		"message": map[string]any{"description": "what to write (any value; objects are written as JSON)"},
		"level":   map[string]any{"type": "string", "enum": []any{"debug", "info", "warn", "warning", "error"}, "default": "info"},
	})
}

// OutputSchema implements Described.
func (Log) OutputSchema() map[string]any {
	return closedObject([]string{"message"}, map[string]any{"message": map[string]any{"type": "string"}})
}

// InputSchema implements Described.
func (Transform) InputSchema() map[string]any {
	return closedObject([]string{"value"}, map[string]any{
		"value": map[string]any{"description": "any JSON value; every ${{ }} inside it is evaluated"},
	})
}

// OutputSchema implements Described.
func (Transform) OutputSchema() map[string]any { return map[string]any{"description": "the value"} }

// InputSchema implements Described.
func (Noop) InputSchema() map[string]any {
	return closedObject(nil, map[string]any{
		"delay": map[string]any{"type": "string", "description": "how long to wait, e.g. 250ms, 2s"},
		"fail":  map[string]any{"description": "fail with this message"},
	})
}

// OutputSchema implements Described.
func (Noop) OutputSchema() map[string]any { return closedObject(nil, map[string]any{}) }

// closedObject is an object schema refusing unknown keys.
func closedObject(required []string, props map[string]any) map[string]any {
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		req := make([]any, len(required))
		for i, r := range required {
			req[i] = r
		}
		s["required"] = req
	}
	return s
}
