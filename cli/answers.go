package cli

import (
	"encoding/json"
	"os"
	"strings"

	"go.yaml.in/yaml/v4"

	"stepwise.dev/stepwise/workflow"
)

// readAnswers reads an answers file: a YAML or JSON map from step id to
// answer (agent outputs too).
func readAnswers(path string) (map[string]any, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, usageErr("answers file: %v", err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, usageErr("answers file %s: %v", path, err)
	}
	return jsonClean(m).(map[string]any), nil
}

// jsonClean converts YAML-decoded values (int, map[string]any with nested
// maps, …) into the JSON data model.
func jsonClean(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.UseNumber()
	if d.Decode(&out) != nil {
		return v
	}
	return numbers(out)
}

func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	}
	return v
}

// parseInputs reads --input k=v flags, typing each value by the input's
// declaration (so `--input count=3` is the integer 3).
func parseInputs(flags []string, wf *workflow.Workflow) (map[string]any, error) {
	out := map[string]any{}
	for _, f := range flags {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return nil, usageErr("--input %q: write name=value", f)
		}
		in := wf.Inputs[k]
		if in == nil {
			out[k] = v // reported as unknown by the engine, with the declared names
			continue
		}
		typed, err := workflow.ParseText(v, in.Type)
		if err != nil {
			return nil, usageErr("--input %s: %v", k, err)
		}
		out[k] = typed
	}
	return out, nil
}

