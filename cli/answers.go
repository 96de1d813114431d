package cli

import (
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
	return workflow.PlainData(m).(map[string]any), nil
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
