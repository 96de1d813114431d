package engine

import (
	"errors"
	"fmt"

	"stepwise.dev/stepwise/internal/schema"
	"stepwise.dev/stepwise/internal/workflow"
)

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
	var ve *schema.Error
	if !errors.As(err, &ve) {
		return []workflow.Violation{{Rule: "answer", Message: err.Error()}}
	}
	var vs []workflow.Violation
	for _, l := range ve.Leaves() {
		ptr := workflow.Pointer(l.InstanceLocation...)
		where := "the output"
		if ptr != "" {
			where = ptr
		}
		vs = append(vs, workflow.Violation{Path: ptr, Rule: "output-schema", Message: rs.mask.Mask(where + ": " + l.Message)})
	}
	return vs
}

// outputSchema compiles (once per version and step) an agent step's schema.
func (e *Engine) outputSchema(version string, s *workflow.Step) (*schema.Schema, error) {
	key := version + "\x00" + s.ID
	if sch, ok := e.schemas.Get(key); ok {
		return sch, nil
	}
	sch, err := schema.Compile(s.Agent.OutputSchema)
	if err != nil {
		return nil, fmt.Errorf("output_schema of %s: %w", s.ID, err)
	}
	e.schemas.Add(key, sch)
	return sch, nil
}
