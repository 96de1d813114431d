package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/huh/v2"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/service"
	"stepwise.dev/stepwise/internal/workflow"
)

// prompter gets the answer to a pause from a person (or a test).
type prompter interface {
	ask(ctx context.Context, p *service.Pause) (any, error)
}

var errAborted = errors.New("aborted")

// terminalPrompter asks in the terminal with huh: typed inputs validated as
// they are typed, masked secrets, choices as selects, defaults filled in.
// Every form reads the terminal through in, the command's one reader.
type terminalPrompter struct {
	out io.Writer
	in  *termInput
}

func (t terminalPrompter) ask(ctx context.Context, p *service.Pause) (any, error) {
	if p.Kind == code.PauseAgent {
		return t.agent(ctx, p)
	}
	var fields []huh.Field
	var collect []func() (string, any, error)
	if len(p.Fields) == 0 {
		f, get := questionField(p.Question, p.Title)
		fields, collect = append(fields, f), append(collect, get)
	} else {
		for _, q := range p.Fields {
			f, get := questionField(q, "")
			fields, collect = append(fields, f), append(collect, get)
		}
	}
	group := huh.NewGroup(fields...)
	if len(p.Fields) > 0 && p.Prompt != "" {
		group = group.Title(p.Prompt)
	}
	if err := runForm(ctx, t.in, t.out, huh.NewForm(group), fields); err != nil {
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
func questionField(q service.Question, title string) (huh.Field, func() (string, any, error)) {
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
		f := huh.NewConfirm().Title(label).Description(questionHelp(q)).Value(&v)
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
		f := huh.NewSelect[int]().Title(label).Description(questionHelp(q)).Options(opts...).Value(&idx)
		return f, func() (string, any, error) { return q.Name, q.Choices[idx].Value, nil }
	case "multi-choice":
		var picked []int
		defaults, _ := q.Default.([]any)
		opts := make([]huh.Option[int], len(q.Choices))
		for i, c := range q.Choices {
			opts[i] = huh.NewOption(choiceLabel(c), i)
			if slices.ContainsFunc(defaults, func(d any) bool { return fmt.Sprint(d) == fmt.Sprint(c.Value) }) {
				picked = append(picked, i) // the default is preselected
			}
		}
		values := func() []any {
			out := make([]any, len(picked))
			for i, k := range picked {
				out[i] = q.Choices[k].Value
			}
			return out
		}
		f := huh.NewMultiSelect[int]().Title(label).Description(questionHelp(q)).Options(opts...).Value(&picked).Filterable(false).
			Validate(func([]int) error { return check(values()) })
		return f, func() (string, any, error) { return q.Name, values(), nil }
	default:
		text := ""
		if q.Default != nil {
			text = fmt.Sprint(q.Default)
		}
		parse := func(s string) (any, error) { return workflow.ParseText(s, q.Type) }
		in := huh.NewInput().Title(label).Description(questionHelp(q)).Value(&text).Validate(func(s string) error {
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
func (t terminalPrompter) agent(ctx context.Context, p *service.Pause) (any, error) {
	printPause(t.out, p)
	var text string
	f := huh.NewText().Title("The agent's output (JSON)").Value(&text).Validate(func(s string) error {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			return fmt.Errorf("not JSON: %v", err)
		}
		return nil
	})
	if err := runForm(ctx, t.in, t.out, huh.NewForm(huh.NewGroup(f)), []huh.Field{f}); err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return nil, err
	}
	return workflow.PlainData(v), nil
}

// runForm runs form in a Bubble Tea program of its own that reads the
// terminal through a session of in (see termInput) and writes to out;
// fields are the form's fields in order. errAborted when the person
// aborted or ctx ended.
func runForm(ctx context.Context, in *termInput, out io.Writer, form *huh.Form, fields []huh.Field) error {
	form.SubmitCmd = tea.Quit
	form.CancelCmd = tea.Interrupt
	gatesOf := func(f huh.Field) gateSet {
		g := gateEnter
		if i := slices.Index(fields, f); i >= 0 && i < len(fields)-1 {
			g |= gateTab // Tab moves on, except from the last field
		}
		if _, ok := f.(*huh.Confirm); ok {
			g |= gateYesNo
		}
		return g
	}
	s := in.session(gatesOf(form.GetFocusedField()))
	defer s.close()
	m := &formModel{form: form, s: s, gatesOf: gatesOf}
	// Ctrl-C is a signal in keysMode: the command's signal context ends ctx
	// (Bubble Tea's own handler could block on a program that ctx stopped).
	_, err := tea.NewProgram(m, tea.WithInput(s), tea.WithOutput(out), tea.WithContext(ctx), tea.WithoutSignalHandler()).Run()
	switch {
	case form.State == huh.StateCompleted:
		return nil
	case form.State == huh.StateAborted || errors.Is(err, tea.ErrInterrupted) || ctx.Err() != nil:
		return errAborted
	case err != nil:
		return err
	}
	return errAborted // the terminal closed
}

// formModel is a huh form as a Bubble Tea model that tells its input
// session when the form has reacted to a gate key: the focus moved, or
// the field refused the answer (the session then lets keys through
// again), or the form ended (the session closes at once, so that no key
// typed after the answer reaches this program).
type formModel struct {
	form    *huh.Form
	s       *inputSession
	gatesOf func(huh.Field) gateSet
	seen    int       // the session's count of the gate key the form was given last
	from    huh.Field // the field that had the focus then
}

// heldTimeout comes holdFallback after the form was given gate key gen.
type heldTimeout struct{ gen int }

func (m *formModel) Init() tea.Cmd { return m.form.Init() }

func (m *formModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if t, ok := msg.(heldTimeout); ok {
		if t.gen == m.seen && m.s.holding(t.gen) {
			m.s.release(t.gen, m.gatesOf(m.form.GetFocusedField()))
		}
		return m, nil
	}
	before := m.form.GetFocusedField()
	k, ok := msg.(tea.KeyPressMsg)
	gateKey := ok && isGateKey(k, m.gatesOf(before))
	fm, cmd := m.form.Update(msg)
	m.form = fm.(*huh.Form)
	if m.form.State != huh.StateNormal {
		m.s.close()
		return m, cmd
	}
	now := m.form.GetFocusedField()
	if gateKey {
		// The session hands out nothing after a gate key: the one it holds
		// after is this one.
		if gen, held := m.s.heldGen(); held && gen != m.seen {
			m.seen, m.from = gen, before
			if now == before && now.Error() == nil {
				// Huh moves on (or ends) through commands that run after
				// the key; a key it ignored is let go after a while.
				return m, tea.Batch(cmd, tea.Tick(holdFallback, func(time.Time) tea.Msg { return heldTimeout{gen} }))
			}
		}
	}
	if m.seen > 0 && m.s.holding(m.seen) && (now != m.from || (gateKey && now.Error() != nil)) {
		m.s.release(m.seen, m.gatesOf(now))
	}
	return m, cmd
}

func (m *formModel) View() tea.View { return tea.NewView(m.form.View()) }

// isGateKey tells whether k is one of the keys in g, as the session's
// scanner tells them from the bytes.
func isGateKey(k tea.KeyPressMsg, g gateSet) bool {
	switch {
	case k.Code == tea.KeyEnter && k.Mod&^tea.ModAlt == 0:
		return g&gateEnter != 0 // Alt+Enter too: ESC CR, which the scanner holds after
	case k.Code == tea.KeyTab && k.Mod == 0:
		return g&gateTab != 0
	}
	switch k.Text {
	case "y", "Y", "n", "N":
		return g&gateYesNo != 0
	}
	return false
}
