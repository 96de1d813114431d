package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"charm.land/huh/v2"

	"stepwise.dev/stepwise/engine"
	"stepwise.dev/stepwise/workflow"
)

// prompter gets the answer to a pause from a person (or a test).
type prompter interface {
	ask(ctx context.Context, p *engine.Pause) (any, error)
}

var errAborted = errors.New("aborted")

// terminalPrompter asks in the terminal with huh: typed inputs validated as
// they are typed, masked secrets, choices as selects, defaults filled in.
type terminalPrompter struct{ out io.Writer }

func (t terminalPrompter) ask(ctx context.Context, p *engine.Pause) (any, error) {
	if p.Kind == engine.KindAgent {
		return t.agent(ctx, p)
	}
	var fields []huh.Field
	var collect []func() (string, any, error)
	if len(p.Fields) == 0 {
		f, get := questionField(p.Question, p.Title)
		fields, collect = append(fields, f), append(collect, get)
	} else {
		if p.Prompt != "" {
			fields = append(fields, huh.NewNote().Title(p.Prompt))
		}
		for _, q := range p.Fields {
			f, get := questionField(q, "")
			fields, collect = append(fields, f), append(collect, get)
		}
	}
	form := huh.NewForm(huh.NewGroup(fields...)).WithOutput(t.out)
	if err := form.RunWithContext(ctx); err != nil {
		if errors.Is(err, huh.ErrUserAborted) || ctx.Err() != nil {
			return nil, errAborted
		}
		return nil, err
	}
	if len(p.Fields) == 0 {
		_, v, err := collect[0]()
		return v, err
	}
	answer := map[string]any{}
	for _, get := range collect {
		name, v, err := get()
		if err != nil {
			return nil, err
		}
		answer[name] = v
	}
	return answer, nil
}

// questionField builds the huh field for one question and a function that
// reads its typed answer after the form ran.
func questionField(q engine.Question, title string) (huh.Field, func() (string, any, error)) {
	label := q.Prompt
	if label == "" {
		label = q.Name
	}
	if title != "" && title != label {
		label = title + ": " + label
	}
	check := func(v any) error {
		probs := workflow.CheckAnswer(&workflow.Ask{Type: q.Type, Pattern: q.Pattern, Min: q.Min, Max: q.Max}, q.Choices, v)
		if len(probs) > 0 {
			return errors.New(strings.Join(probs, "; "))
		}
		return nil
	}
	switch q.Type {
	case "boolean":
		v, _ := q.Default.(bool)
		f := huh.NewConfirm().Title(label).Description(q.Help).Value(&v)
		return f, func() (string, any, error) { return q.Name, v, nil }
	case "choice":
		idx := 0
		opts := make([]huh.Option[int], len(q.Choices))
		for i, c := range q.Choices {
			opts[i] = huh.NewOption(choiceLabel(c), i)
			if q.Default != nil && fmt.Sprint(c.Value) == fmt.Sprint(q.Default) {
				idx = i
			}
		}
		f := huh.NewSelect[int]().Title(label).Description(q.Help).Options(opts...).Value(&idx)
		return f, func() (string, any, error) { return q.Name, q.Choices[idx].Value, nil }
	case "multi-choice":
		var picked []int
		opts := make([]huh.Option[int], len(q.Choices))
		for i, c := range q.Choices {
			opts[i] = huh.NewOption(choiceLabel(c), i)
		}
		values := func() []any {
			out := make([]any, len(picked))
			for i, k := range picked {
				out[i] = q.Choices[k].Value
			}
			return out
		}
		f := huh.NewMultiSelect[int]().Title(label).Description(q.Help).Options(opts...).Value(&picked).
			Validate(func([]int) error { return check(values()) })
		return f, func() (string, any, error) { return q.Name, values(), nil }
	default:
		text := ""
		if q.Default != nil {
			text = fmt.Sprint(q.Default)
		}
		parse := func(s string) (any, error) { return workflow.ParseText(s, q.Type) }
		in := huh.NewInput().Title(label).Description(q.Help).Value(&text).Validate(func(s string) error {
			v, err := parse(s)
			if err != nil {
				return err
			}
			return check(v)
		})
		if q.Secret {
			in = in.EchoMode(huh.EchoModePassword)
		}
		return in, func() (string, any, error) {
			v, err := parse(text)
			return q.Name, v, err
		}
	}
}

func choiceLabel(c workflow.Choice) string {
	label := c.Label
	if label == "" {
		label = fmt.Sprint(c.Value)
	}
	if c.Description != "" {
		label += " — " + c.Description
	}
	return label
}

// agent shows an agent step's instructions and reads its output as JSON.
func (t terminalPrompter) agent(ctx context.Context, p *engine.Pause) (any, error) {
	printPause(t.out, p)
	var text string
	f := huh.NewText().Title("The agent's output (JSON)").Value(&text).Validate(func(s string) error {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			return fmt.Errorf("not JSON: %v", err)
		}
		return nil
	})
	if err := huh.NewForm(huh.NewGroup(f)).WithOutput(t.out).RunWithContext(ctx); err != nil {
		if errors.Is(err, huh.ErrUserAborted) || ctx.Err() != nil {
			return nil, errAborted
		}
		return nil, err
	}
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return nil, err
	}
	return workflow.PlainData(v), nil
}
