package cli

import (
	"os"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v4"

	"stepwise.dev/stepwise/internal/service"
	"stepwise.dev/stepwise/internal/workflow"
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

// parseInputs reads --input k=v flags, typed by the inputs' declarations
// (so `--input count=3` is the integer 3). A value that does not parse is
// left as text for the service's checks, which report every invalid input
// at once.
func parseInputs(flags []string, wf *workflow.Workflow) (map[string]any, error) {
	text, err := textInputs(flags)
	if err != nil {
		return nil, err
	}
	return service.TypedInputs(wf, nil, text), nil
}

// textInputs reads -i name=value flags as text; flags that are not
// name=value are all named in one usage error.
func textInputs(flags []string) (map[string]string, error) {
	out := map[string]string{}
	var bad []string
	for _, f := range flags {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			bad = append(bad, strconv.Quote(f))
			continue
		}
		out[k] = v
	}
	if len(bad) > 0 {
		return nil, usageErr("--input %s: write name=value", strings.Join(bad, ", "))
	}
	return out, nil
}
