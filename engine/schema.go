package engine

import (
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"stepwise.dev/stepwise/workflow"
)

var printer = message.NewPrinter(language.English)

// checkOutputSchema validates an agent's output against the step's
// output_schema, reporting every failing leaf with its instance path.
func (e *Engine) checkOutputSchema(rs *runState, s *workflow.Step, v any) []workflow.Violation {
	if s.Agent == nil || s.Agent.OutputSchema == nil {
		if v == nil {
			return []workflow.Violation{{Rule: "answer", Message: "the agent step needs an output (any JSON value)"}}
		}
		return nil
	}
	sch, err := e.outputSchema(rs.run.Version, s)
	if err != nil {
		return []workflow.Violation{{Rule: "schema", Message: err.Error()}}
	}
	err = sch.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []workflow.Violation{{Rule: "answer", Message: err.Error()}}
	}
	var vs []workflow.Violation
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			ptr := workflow.Pointer(e.InstanceLocation...)
			where := "the output"
			if ptr != "" {
				where = ptr
			}
			vs = append(vs, workflow.Violation{Path: ptr, Rule: "output-schema", Message: rs.mask.Mask(where + ": " + e.ErrorKind.LocalizedString(printer))})
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return vs
}

// outputSchema compiles (once per version and step) an agent step's schema.
func (e *Engine) outputSchema(version string, s *workflow.Step) (*jsonschema.Schema, error) {
	key := version + "\x00" + s.ID
	e.defsMu.Lock()
	sch, ok := e.schemas[key]
	e.defsMu.Unlock()
	if ok {
		return sch, nil
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{})
	url := "stepwise:" + strings.ReplaceAll(s.ID, "/", "_") + ".json"
	if err := c.AddResource(url, s.Agent.OutputSchema); err != nil {
		return nil, fmt.Errorf("output_schema of %s: %w", s.ID, err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("output_schema of %s: %w", s.ID, err)
	}
	e.defsMu.Lock()
	e.schemas[key] = sch
	e.defsMu.Unlock()
	return sch, nil
}
