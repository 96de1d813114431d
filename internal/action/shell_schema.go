package action

// The schemas of the shell action: closed, so that a misspelled `with` key
// is caught when the workflow is validated.

// scalar is a string, number or boolean: what an argument or environment
// value may be (a template may render a number).
var scalar = map[string]any{"type": []any{"string", "number", "boolean"}}

// InputSchema implements Described.
func (Shell) InputSchema() map[string]any {
	return closedObject([]string{"command"}, map[string]any{
		"command": map[string]any{"type": "string", "minLength": 1,
			"description": "the program: a name found through PATH, or a path (relative to dir); with shell: true, a script for sh -c"},
		"args": map[string]any{"type": "array", "items": scalar,
			"description": "its arguments, passed as they are (no shell splitting, quoting or globbing); with shell: true, $1…"},
		"shell": map[string]any{"type": "boolean", "default": false,
			"description": "run `sh -c command` instead of the program itself"},
		"env": map[string]any{"type": "object", "additionalProperties": scalar,
			"propertyNames": map[string]any{"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
			"description":   "variables added to the clean environment (PATH, HOME = the workspace, LANG); the server's own environment is not passed on"},
		"dir": map[string]any{"type": "string", "default": ".",
			"description": "the working directory, relative to the workspace"},
		"timeout": map[string]any{"type": "string", "default": "5m",
			"description": "how long the command may run before its process group is killed (a duration)"},
		"stdin": map[string]any{"type": "string", "description": "text given to the command's standard input (default: none)"},
		"max_output_bytes": map[string]any{"type": "integer", "minimum": 0, "default": DefaultMaxOutput,
			"description": "how much of stdout and of stderr (each) is kept; the rest is dropped and truncated is set"},
		"ok_exit_codes": map[string]any{"type": "array", "minItems": 1, "default": []any{0},
			"items":       map[string]any{"type": "integer", "minimum": 0, "maximum": 255},
			"description": "exit codes that count as success; any other fails the step"},
		"parse": map[string]any{"type": "string", "enum": []any{"text", "json"}, "default": "text",
			"description": "json: stdout is parsed, and the output's stdout is the JSON value"},
	})
}

// OutputSchema implements Described.
func (Shell) OutputSchema() map[string]any {
	return closedObject([]string{"exit_code", "stdout", "stderr", "truncated", "duration_ms"}, map[string]any{
		"exit_code":   map[string]any{"type": "integer"},
		"stdout":      map[string]any{"description": "the standard output as text; the parsed JSON value with parse: json"},
		"stderr":      map[string]any{"type": "string"},
		"truncated":   map[string]any{"type": "boolean", "description": "stdout or stderr was longer than max_output_bytes and was cut"},
		"duration_ms": map[string]any{"type": "integer"},
	})
}
