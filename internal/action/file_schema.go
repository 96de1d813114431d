package action

// The schemas of the file action: closed, so that a misspelled `with` key
// is caught when the workflow is validated.

// InputSchema implements Described.
func (File) InputSchema() map[string]any {
	s := closedObject([]string{"op", "path"}, map[string]any{
		"op": map[string]any{"type": "string", "enum": []any{"read", "write", "append", "list", "delete", "exists", "mkdir"}},
		"path": map[string]any{"type": "string", "minLength": 1,
			"description": "relative to the workspace (\".\" is the workspace itself); paths leaving it are refused"},
		"content": map[string]any{"description": "write, append: text, or any other JSON value, written as JSON"},
		"encoding": map[string]any{"type": "string", "enum": []any{"utf8", "base64"}, "default": "utf8",
			"description": "read: how content is returned; write, append: how a text content is decoded"},
		"recursive": map[string]any{"type": "boolean", "default": false,
			"description": "list: the whole tree; delete: a directory with everything in it"},
		"max_bytes": map[string]any{"type": "integer", "minimum": 0, "default": DefaultMaxRead,
			"description": "read: fail on a file larger than this"},
	})
	s["allOf"] = []any{map[string]any{
		"if":   map[string]any{"properties": map[string]any{"op": map[string]any{"enum": []any{"write", "append"}}}, "required": []any{"op"}},
		"then": map[string]any{"required": []any{"content"}},
	}}
	return s
}

// OutputSchema implements Described.
func (File) OutputSchema() map[string]any {
	entry := closedObject([]string{"name", "type"}, map[string]any{
		"name": map[string]any{"type": "string", "description": "relative to the listed directory, / separated"},
		"type": map[string]any{"type": "string", "enum": []any{"file", "dir", "symlink", "other"}},
		"size": map[string]any{"type": "integer", "description": "files only"},
	})
	return closedObject([]string{"path"}, map[string]any{
		"path":      map[string]any{"type": "string", "description": "the path, cleaned, relative to the workspace"},
		"content":   map[string]any{"type": "string", "description": "read"},
		"size":      map[string]any{"type": "integer", "description": "read: bytes read; write, append: bytes written"},
		"entries":   map[string]any{"type": "array", "items": entry, "description": "list, in tree order"},
		"truncated": map[string]any{"type": "boolean", "description": "list: stopped at 10000 entries"},
		"deleted":   map[string]any{"type": "boolean", "description": "delete: false when there was nothing to delete"},
		"exists":    map[string]any{"type": "boolean", "description": "exists"},
		"type":      map[string]any{"type": "string", "enum": []any{"file", "dir", "other"}, "description": "exists: what the path is"},
		"created":   map[string]any{"type": "boolean", "description": "mkdir: false when the directory was there"},
	})
}
