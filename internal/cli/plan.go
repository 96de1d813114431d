package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/service"
)

func newPlanCmd(g *globals) *cobra.Command {
	var inputs []string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "plan FILE|NAME [-i name=value]... [--json]",
		Short: "Show what a run would do with these inputs, without starting it",
		Long: "Resolve a workflow's inputs (given, environment, default, missing; secrets shown as ***),\n" +
			"check them as run would, and list every step in order: whether it runs, is skipped or is\n" +
			"decided at run time, with its arguments rendered with the values known now.\n" +
			"Nothing is recorded.\n\n" +
			"Exit status: 0 ready to run, 1 not ready (inputs missing or invalid) or invalid workflow,\n" +
			"2 usage or I/O error.",
		Args: exactArgs(1, "plan: give one workflow file or name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := textInputs(inputs)
			if err != nil {
				return err
			}
			return g.with(func(ctx context.Context, svc *service.Service) error {
				return planWorkflow(ctx, cmd, svc, args[0], text, asJSON)
			})
		},
	}
	cmd.Flags().StringArrayVarP(&inputs, "input", "i", nil, "an input as name=value (repeatable)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the plan as JSON")
	return cmd
}

func planWorkflow(ctx context.Context, cmd *cobra.Command, svc *service.Service, ref string, text map[string]string, asJSON bool) error {
	p, err := svc.Plan(ctx, service.PlanRequest{Ref: ref, TextInputs: text})
	if err != nil {
		var ee *service.Error
		if errors.As(err, &ee) {
			return describe(err)
		}
		return &exitError{code: ExitUsage, msg: err.Error()} // the file could not be read
	}
	out := cmd.OutOrStdout()
	if asJSON {
		if err := writeJSON(out, p); err != nil {
			return err
		}
	} else if !p.Valid {
		file := ref
		if p.Draft {
			file += " (draft)"
		}
		printReports(out, []fileReport{{File: file, Valid: false, Version: p.Version, Violations: p.Violations}})
	} else {
		printPlan(out, p)
	}
	if !p.Ready {
		return &exitError{code: ExitInvalid}
	}
	return nil
}

// printPlan prints a valid workflow's plan for a person.
func printPlan(w io.Writer, p *service.Plan) {
	state := "ready to run"
	if !p.Ready {
		state = "NOT READY"
	}
	what := p.Version
	if p.Draft {
		what = "draft, " + what
	}
	fmt.Fprintf(w, "%s (%s): %s\n", p.Name, what, state)
	if len(p.Inputs) > 0 {
		fmt.Fprintln(w, "inputs:")
	}
	for _, in := range p.Inputs {
		printPlanInput(w, in)
	}
	if len(p.UnknownInputs) > 0 {
		fmt.Fprintf(w, "not declared: %s\n", strings.Join(p.UnknownInputs, ", "))
	}
	fmt.Fprintln(w, "steps:")
	depth := map[string]int{}
	for _, s := range p.Steps {
		if s.Parent != "" {
			depth[s.ID] = depth[s.Parent] + 1
		}
		printPlanStep(w, s, strings.Repeat("  ", depth[s.ID]+1))
	}
	for _, v := range p.Violations {
		if !strings.HasPrefix(v.Path, "/inputs/") {
			fmt.Fprintf(w, "%s: %s\n", v.Rule, v.Message)
		}
	}
}

func printPlanInput(w io.Writer, in service.PlanInput) {
	decl := in.Type
	if in.Required {
		decl += ", required"
	}
	if in.Secret {
		decl += ", secret"
	}
	var value string
	switch in.Source {
	case code.SourceMissing:
		value = "missing"
	case code.SourceNone:
		value = "null (not given)"
	default:
		value = compact(in.Value) + " (" + in.Source
		if in.Env != "" {
			value += " " + in.Env
		}
		value += ")"
	}
	fmt.Fprintf(w, "  %s (%s): %s\n", in.Name, decl, value)
	for _, p := range in.Problems {
		fmt.Fprintf(w, "    ✗ %s\n", p)
	}
}

func printPlanStep(w io.Writer, s service.PlanStep, indent string) {
	what := s.Kind
	switch {
	case s.Uses != "":
		what += " " + s.Uses
	case s.Workflow != "":
		what += " " + s.Workflow
	}
	line := fmt.Sprintf("%s%-7s %s: %s", indent, s.Decision, s.ID, what)
	if s.If != "" {
		line += " if " + s.If
	}
	if s.Reason != "" {
		line += " — " + s.Reason
	}
	fmt.Fprintln(w, line)
	detail := indent + "        "
	if s.With != nil {
		fmt.Fprintf(w, "%swith: %s\n", detail, compact(s.With))
	}
	for _, kv := range [][2]string{{"prompt", s.Prompt}, {"persona", s.Persona}, {"instructions", s.Instructions}, {"message", s.Message}, {"sleep", s.Sleep}} {
		if kv[1] != "" {
			fmt.Fprintf(w, "%s%s: %s\n", detail, kv[0], kv[1])
		}
	}
	for _, f := range s.Fields {
		fmt.Fprintf(w, "%sfield %s (%s): %s\n", detail, f.Name, f.Type, f.Prompt)
	}
	if s.Context != nil {
		fmt.Fprintf(w, "%scontext: %s\n", detail, compact(s.Context))
	}
	if s.Foreach != nil {
		label := "foreach"
		if s.ItemsKnown {
			label = "items"
		}
		fmt.Fprintf(w, "%s%s: %s\n", detail, label, compact(s.Foreach))
	}
	for i, c := range s.Cases {
		cond := "always"
		if c.If != "" {
			cond = "if " + c.If
		}
		line := fmt.Sprintf("%scase %d %s → %s: %s", detail, i+1, cond, c.Goto, c.Decision)
		if c.Reason != "" {
			line += " — " + c.Reason
		}
		fmt.Fprintln(w, line)
	}
	for _, p := range s.Problems {
		fmt.Fprintf(w, "%s✗ %s\n", detail, p)
	}
}

// compact writes a value as one line of JSON (strings as they are).
func compact(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
