package action

import "strings"

// parseShell reads the shell action's input.
func parseShell(in map[string]any) (*shellRun, error) {
	command, err := stringIn("shell", in, "command", "")
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(command) == "" {
		return nil, inputError("shell", "command is required: a program name or path (or a script, with shell: true)")
	}
	args, err := textList("shell", in, "args")
	if err != nil {
		return nil, err
	}
	useShell, err := boolIn("shell", in, "shell")
	if err != nil {
		return nil, err
	}
	r := &shellRun{program: command, argv: append([]string{command}, args...)}
	if useShell {
		// sh -c SCRIPT NAME ARGS…: NAME becomes $0, ARGS $1….
		r.program = "sh"
		r.argv = append([]string{"sh", "-c", command, "sh"}, args...)
	} else if strings.ContainsRune(command, 0) {
		return nil, inputError("shell", "command contains a NUL byte")
	}
	if r.env, err = envIn(in); err != nil {
		return nil, err
	}
	if r.dir, err = stringIn("shell", in, "dir", "."); err != nil {
		return nil, err
	}
	if r.timeout, err = durationIn("shell", in, "timeout", DefaultShellTimeout); err != nil {
		return nil, err
	}
	if v, ok := in["stdin"]; ok && v != nil {
		s, isText := v.(string)
		if !isText {
			return nil, inputError("shell", "stdin must be a string, not %s", describeValue(v))
		}
		r.stdin = &s
	}
	if r.maxOutput, err = intIn("shell", in, "max_output_bytes", DefaultMaxOutput, 0); err != nil {
		return nil, err
	}
	r.okCodes = []int64{0}
	if v, ok := in["ok_exit_codes"]; ok && v != nil {
		list, isList := v.([]any)
		if !isList || len(list) == 0 {
			return nil, inputError("shell", "ok_exit_codes must be a non-empty list of exit codes")
		}
		r.okCodes = r.okCodes[:0]
		for _, item := range list {
			n, ok := wholeNumber(item)
			if !ok || n < 0 || n > 255 {
				return nil, inputError("shell", "ok_exit_codes: %v is not an exit code (0 to 255)", item)
			}
			r.okCodes = append(r.okCodes, n)
		}
	}
	parse, err := stringIn("shell", in, "parse", "text")
	if err != nil {
		return nil, err
	}
	switch parse {
	case "text":
	case "json":
		r.parseJSON = true
	default:
		return nil, inputError("shell", "parse %q: want text or json", parse)
	}
	return r, nil
}

// envIn reads the env object: names to texts.
func envIn(in map[string]any) (map[string]string, error) {
	v, ok := in["env"]
	if !ok || v == nil {
		return nil, nil
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		return nil, inputError("shell", "env must be an object of names to values, not %s", describeValue(v))
	}
	env := make(map[string]string, len(m))
	for k, val := range m {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, inputError("shell", "env: %q is not a variable name", k)
		}
		s, ok := scalarText(val)
		if !ok || strings.ContainsRune(s, 0) {
			return nil, inputError("shell", "env.%s must be a string, number or boolean without NUL bytes", k)
		}
		env[k] = s
	}
	return env, nil
}
