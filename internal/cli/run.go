package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/service"
	"stepwise.dev/stepwise/internal/workflow"
)

// runOptions are the flags of run and resume.
type runOptions struct {
	inputs   []string
	answers  string
	asJSON   bool
	noInput  bool
	detach   bool
	prompter prompter // tests inject one
}

// runResult is what --json prints.
type runResult struct {
	RunID   string          `json:"run_id"`
	Status  string          `json:"status"`
	Outputs map[string]any  `json:"outputs,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
	Pause   *service.Pause  `json:"pause,omitempty"`
}

func newRunCmd(g *globals) *cobra.Command {
	o := &runOptions{}
	ro := &remoteOptions{}
	cmd := &cobra.Command{
		Use:   "run FILE|NAME",
		Short: "Run a workflow: asks its questions in the terminal, or takes answers from a file",
		Long: "Run a workflow file, or a workflow of the library by name (a name that is only a draft\n" +
			"runs the draft, and says so).\n\n" +
			"In a terminal, questions are asked interactively and agent steps show their instructions.\n" +
			"Otherwise answers come from --answers (a YAML/JSON map of step id to answer); when one is\n" +
			"missing the run is left waiting and its pause is printed.\n\n" +
			"With --server URL (streamable HTTP, bearer token from $STEPWISE_TOKEN) or --server-cmd CMD\n" +
			"(a stdio server it starts), the run goes through that MCP server instead, asked here the same\n" +
			"way; --session FILE (default .stepwise/session.json) keeps where it is, for\n" +
			"`stepwise resume --session FILE`. A secret goes to the server's one-time secret page, over TLS\n" +
			"or loopback only (or answer $NAME, a variable of the server's environment).\n\n" +
			"Exit status: 0 succeeded, 1 failed or canceled (or invalid workflow/inputs/answers),\n" +
			"2 usage or I/O error, 3 waiting for an answer, 130 interrupted (the run stays resumable).",
		Args: exactArgs(1, "run: give one workflow file or name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if ro.remote() {
				if o.detach {
					return usageErr("--detach runs in this process's home: not with --server or --server-cmd")
				}
				return runRemote(cmd, o, ro, args[0])
			}
			return runWorkflow(cmd, g, o, args[0])
		},
	}
	o.flags(cmd)
	ro.flags(cmd)
	cmd.Flags().StringArrayVarP(&o.inputs, "input", "i", nil, "an input as name=value (repeatable)")
	cmd.Flags().BoolVar(&o.detach, "detach", false, "record the run and exit without executing it (resume it later)")
	return cmd
}

func newResumeCmd(g *globals) *cobra.Command {
	o := &runOptions{}
	ro := &remoteOptions{}
	var all bool
	cmd := &cobra.Command{
		Use:   "resume RUN | --all | --session FILE",
		Short: "Continue a run: drive it if it was interrupted, answer its pause if it waits",
		Long: "Continue a run that was interrupted (Ctrl-C, crash) or that waits for an answer.\n" +
			"With --all, drive every interrupted run of the home until none is running.\n" +
			"With --session FILE, continue a run started with `stepwise run --server|--server-cmd` (a\n" +
			"stored server gives its open pause again; a stateless one continues from the state kept).",
		Args: func(cmd *cobra.Command, args []string) error {
			if (all || cmd.Flags().Changed("session")) && len(args) == 0 {
				return nil
			}
			if !all && len(args) == 1 {
				return nil
			}
			return usageErr("resume: give one run id, or --all, or --session FILE")
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if all {
				return resumeAll(cmd, g)
			}
			if cmd.Flags().Changed("session") {
				return resumeRemote(cmd, o, ro)
			}
			return resumeRun(cmd, g, o, args[0])
		},
	}
	o.flags(cmd)
	cmd.Flags().BoolVar(&all, "all", false, "drive every interrupted run until none is running")
	ro.flags(cmd)
	return cmd
}

func (o *runOptions) flags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.answers, "answers", "", "YAML/JSON file mapping step ids to answers")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, `print {"run_id","status","outputs","pause"} as JSON`)
	cmd.Flags().BoolVar(&o.noInput, "no-input", false, "never ask in the terminal; stop when an answer is missing")
}

func exactArgs(n int, msg string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErr("%s", msg)
		}
		return nil
	}
}

// signalContext is canceled on SIGINT/SIGTERM; interrupted reports which.
func signalContext() (context.Context, func(), func() bool) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	var got bool
	done := make(chan struct{})
	go func() {
		select {
		case <-ch:
			got = true
			cancel()
		case <-done:
		}
	}()
	return ctx, func() { signal.Stop(ch); close(done); cancel() }, func() bool { return got }
}

// session is what a command that drives runs holds: a context canceled on
// Ctrl-C, and the service.
type session struct {
	ctx         context.Context
	interrupted func() bool
	svc         *service.Service
	out         *progressOut // the actions' output, ordered with the progress lines
	// events are every run's, from before the run started (nil with --json:
	// no progress lines); a sub-workflow's run has an id of its own.
	events      <-chan service.Event
	unsubscribe func()
	close       func()
}

func openSession(cmd *cobra.Command, g *globals, o *runOptions) (*session, error) {
	ctx, stop, interrupted := signalContext()
	out := &progressOut{w: cmd.ErrOrStderr()}
	svc, err := g.open(context.Background(), out)
	if err != nil {
		stop()
		return nil, err
	}
	s := &session{ctx: ctx, interrupted: interrupted, svc: svc, out: out, unsubscribe: func() {}}
	if !o.asJSON {
		s.events, s.unsubscribe = svc.Engine.Subscribe("")
	}
	tracer := openTracer(func(err error) { fmt.Fprintf(cmd.ErrOrStderr(), "tracing left off: %v\n", err) })
	tracing, endTracing := context.WithCancel(context.Background())
	if tracer != nil {
		watchRuns(tracing, tracer, svc)
	}
	s.close = func() {
		s.unsubscribe()
		svc.Close(context.Background())
		endTracing()
		closeTracer(tracer)
		stop()
	}
	return s, nil
}

// follow drives the run to its end (see follow).
func (s *session) follow(cmd *cobra.Command, o *runOptions, id string, answers map[string]any) error {
	return follow(s.ctx, cmd, s.svc, s.out, s.events, s.unsubscribe, o, id, answers, s.interrupted)
}

// inputsAndAnswers reads --input flags (typed by the workflow's
// declarations) and the answers file.
func inputsAndAnswers(o *runOptions, wf *workflow.Workflow) (map[string]any, map[string]any, error) {
	inputs, err := parseInputs(o.inputs, wf)
	if err != nil {
		return nil, nil, err
	}
	answers, err := readAnswers(o.answers)
	if err != nil {
		return nil, nil, err
	}
	return inputs, answers, nil
}

func runWorkflow(cmd *cobra.Command, g *globals, o *runOptions, ref string) error {
	s, err := openSession(cmd, g, o)
	if err != nil {
		return err
	}
	defer s.close()
	ctx, svc := s.ctx, s.svc
	l, err := svc.LoadWorkflow(ref)
	if err != nil {
		return describe(err)
	}
	if l.Draft {
		fmt.Fprintf(cmd.ErrOrStderr(), "running the draft %s (%s): no saved workflow has that name\n", ref, l.Path)
	}
	inputs, answers, err := inputsAndAnswers(o, l.Workflow)
	if err != nil {
		return err
	}
	// An answers file may carry inputs too, under _inputs; -i wins.
	if extra, ok := answers[service.AnswersInputsKey].(map[string]any); ok {
		for k, v := range extra {
			if _, set := inputs[k]; !set {
				inputs[k] = v
			}
		}
		delete(answers, service.AnswersInputsKey)
	}
	if err := svc.CheckAnswerSteps(l, answers); err != nil {
		return answersErr(o.answers, err)
	}
	id, err := svc.StartRun(ctx, l, inputs, o.detach)
	if err != nil {
		return describe(err)
	}
	if o.detach {
		return printOutcome(cmd, o, &service.RunView{ID: id, Status: code.StatusRunning})
	}
	return s.follow(cmd, o, id, answers)
}

func resumeRun(cmd *cobra.Command, g *globals, o *runOptions, id string) error {
	s, err := openSession(cmd, g, o)
	if err != nil {
		return err
	}
	defer s.close()
	answers, err := readAnswers(o.answers)
	if err != nil {
		return err
	}
	if err := s.svc.CheckRunAnswerSteps(s.ctx, id, answers); err != nil {
		return answersErr(o.answers, err)
	}
	r, err := s.svc.Resume(s.ctx, id)
	if err != nil {
		return describe(err)
	}
	if r.DrivenBy != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "run %s is driven by another process (%s); following it here\n", id, r.DrivenBy)
	}
	return s.follow(cmd, o, id, answers)
}

// resumeAll drives every interrupted run until none is running: recovery
// as a command (a server does the same when it starts).
func resumeAll(cmd *cobra.Command, g *globals) error {
	ctx, stop, interrupted := signalContext()
	defer stop()
	svc, err := g.open(context.Background(), io.Discard)
	if err != nil {
		return err
	}
	defer svc.Close(context.Background())
	elsewhere, err := svc.DriveAll(ctx)
	if err != nil {
		if interrupted() {
			return &exitError{code: ExitInterrupted, msg: "interrupted; the runs stay resumable"}
		}
		return describe(err)
	}
	w := cmd.ErrOrStderr()
	for _, d := range elsewhere {
		fmt.Fprintf(w, "run %s: driven by another process (%s), left to it\n", d.RunID, d.Owner)
	}
	if len(elsewhere) > 0 {
		fmt.Fprintf(w, "no other run is running (%d driven by other processes)\n", len(elsewhere))
		return nil
	}
	fmt.Fprintln(w, "no run is running")
	return nil
}

// follow drives a run to its end in this process: it waits while the run
// executes, answers its pauses (answers file, then the terminal), and
// prints the outcome. With events (every run's, subscribed to before the
// run started), it prints progress lines to out (stderr, which the
// actions' output goes to as well, so that stdout carries only the
// result): the steps of the run and of its sub-workflows, retries,
// compensations and hooks.
func follow(ctx context.Context, cmd *cobra.Command, svc *service.Service, out *progressOut, events <-chan service.Event, unsubscribe func(), o *runOptions, id string, answers map[string]any, interrupted func() bool) error {
	errOut := cmd.ErrOrStderr()
	stopProgress := func() {}
	if events != nil {
		printLoop := out.start(events, svc.RunTree(ctx, id))
		done := make(chan struct{})
		go func() {
			defer close(done)
			printLoop()
		}()
		var once sync.Once
		stopProgress = func() {
			once.Do(func() {
				unsubscribe()
				<-done
			})
		}
		defer stopProgress()
	}
	// Progress lines come before the outcome.
	printOutcome := func(cmd *cobra.Command, o *runOptions, v *service.RunView) error {
		stopProgress()
		return printOutcome(cmd, o, v)
	}
	p := o.prompter
	if p == nil && !o.noInput && isTerminal(os.Stdin) && isTerminal(os.Stderr) {
		// One reader of the terminal for all the questions, from now on:
		// keys typed ahead wait for the question they answer.
		in, err := openTerminalInput(os.Stdin)
		if err != nil {
			return &exitError{code: ExitUsage, msg: fmt.Sprintf("terminal: %v", err)}
		}
		defer in.close()
		p = terminalPrompter{out: errOut, in: in}
	}
	// The pauses answered so far: a sub-workflow run numbers its pauses
	// apart from its parent's.
	type pauseKey struct {
		run string
		seq int64
	}
	asked := map[pauseKey]bool{}
	for {
		status, err := svc.Wait(ctx, id, 0)
		if err != nil {
			if interrupted() || errors.Is(err, context.Canceled) {
				return interruptedErr(id)
			}
			return describe(err)
		}
		view, err := svc.GetRun(context.Background(), id)
		if err != nil {
			return describe(err)
		}
		if status != code.StatusWaiting || view.Pause == nil {
			return printOutcome(cmd, o, view)
		}
		pause := view.Pause
		value, ok := answers[pause.StepID]
		if ok && asked[pauseKey{pause.RunID, pause.Seq}] {
			ok = false // the answers file's value was refused: ask instead
		}
		if !ok {
			if p == nil {
				return printOutcome(cmd, o, view)
			}
			value, err = p.ask(ctx, pause)
			if err != nil {
				if interrupted() || errors.Is(err, errAborted) {
					return interruptedErr(id)
				}
				return describe(err)
			}
		}
		asked[pauseKey{pause.RunID, pause.Seq}] = true
		if _, err := svc.Continue(ctx, pause.Token, value); err != nil {
			if service.CodeOf(err) == code.AnswerInvalid && p != nil {
				fmt.Fprintln(errOut, describe(err).msg)
				continue
			}
			if service.CodeOf(err) == code.AnswerInvalid && ok {
				stopProgress()
				return refusedAnswer(cmd, o, view, err)
			}
			return describe(err)
		}
	}
}

// answersErr is an answers file refused before anything changed.
func answersErr(path string, err error) error {
	e := describe(err)
	head, violations, _ := strings.Cut(e.msg, "\n")
	return &exitError{code: e.code, msg: joinLines(fmt.Sprintf("answers file %s: %s; nothing changed", path, head), violations)}
}

// joinLines is a message's first line and the lines listing its
// violations, if any.
func joinLines(head, rest string) string {
	if rest == "" {
		return head
	}
	return head + "\n" + rest
}

// refusedAnswer is an answer of the answers file that failed validation
// with no terminal to ask again in: the run is left waiting at that step,
// and the message says so, with how to resume it. With --json the waiting
// run is printed too.
func refusedAnswer(cmd *cobra.Command, o *runOptions, v *service.RunView, err error) error {
	id, stepID := v.ID, v.Pause.StepID
	e := describe(err)
	head, violations, _ := strings.Cut(e.msg, "\n")
	msg := joinLines(fmt.Sprintf("answers file %s: step %s: %s; run %s is left waiting at step %s: correct the answer, then: stepwise resume %s --answers %s",
		o.answers, stepID, head, id, stepID, id, o.answers), violations)
	if o.asJSON {
		// The caller finds the run and its pause on stdout, as for a run
		// that waits.
		_ = writeJSON(cmd.OutOrStdout(), runResult{RunID: v.ID, Status: v.Status, Pause: v.Pause})
	}
	return &exitError{code: ExitInvalid, msg: msg}
}

func interruptedErr(id string) error {
	return &exitError{code: ExitInterrupted, msg: fmt.Sprintf("interrupted; the run stays resumable: stepwise resume %s", id)}
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// printOutcome prints the run's end (or pause) and picks the exit code.
func printOutcome(cmd *cobra.Command, o *runOptions, v *service.RunView) error {
	out := cmd.OutOrStdout()
	if o.asJSON {
		if err := writeJSON(out, runResult{RunID: v.ID, Status: v.Status, Outputs: v.Outputs, Error: v.Error, Pause: v.Pause}); err != nil {
			return err
		}
	} else {
		printHuman(out, v)
	}
	switch v.Status {
	case code.StatusSucceeded:
		return nil
	case code.StatusWaiting:
		return &exitError{code: ExitWaiting}
	case code.StatusRunning, code.StatusPending, code.StatusPaused, code.StatusQueued:
		return nil // --detach, held by an operator, or queued behind a concurrency limit
	default:
		return &exitError{code: ExitInvalid}
	}
}

func printHuman(w io.Writer, v *service.RunView) {
	fmt.Fprintf(w, "run %s: %s\n", v.ID, v.Status)
	switch v.Status {
	case code.StatusSucceeded:
		if len(v.Outputs) > 0 {
			b, _ := json.MarshalIndent(v.Outputs, "", "  ")
			fmt.Fprintf(w, "outputs: %s\n", b)
		}
	case code.StatusWaiting:
		if p := v.Pause; p != nil {
			printPause(w, p)
			fmt.Fprintf(w, "answer it with: stepwise resume %s --answers FILE   (FILE: {%s: <answer>})\n", v.ID, p.StepID)
		}
	case code.StatusQueued:
		fmt.Fprintf(w, "queued behind its workflow's concurrency limit: it starts when a run of its queue finishes (cancel it with: stepwise cancel %s)\n", v.ID)
	case code.StatusRunning, code.StatusPending, code.StatusPaused:
		fmt.Fprintf(w, "resume it with: stepwise resume %s\n", v.ID)
	default:
		var e struct {
			Message string `json:"message"`
			StepID  string `json:"step_id"`
			Code    string `json:"code"`
		}
		if json.Unmarshal(v.Error, &e) == nil && e.Message != "" {
			if e.Code != "" {
				e.Message = e.Code + ": " + e.Message
			}
			if e.StepID != "" {
				fmt.Fprintf(w, "error in step %s: %s\n", e.StepID, e.Message)
			} else {
				fmt.Fprintf(w, "error: %s\n", e.Message)
			}
		}
	}
}

func printPause(w io.Writer, p *service.Pause) {
	switch p.Kind {
	case code.PauseAgent:
		fmt.Fprintf(w, "waiting for the agent at step %s", p.StepID)
		if p.Persona != "" {
			fmt.Fprintf(w, " (as %s)", p.Persona)
		}
		fmt.Fprintf(w, ":\n  %s\n", p.Instructions)
		if p.OutputSchema != nil {
			b, _ := json.Marshal(p.OutputSchema)
			fmt.Fprintf(w, "  output schema: %s\n", b)
		}
	default:
		fmt.Fprintf(w, "waiting for an answer at step %s: %s\n", p.StepID, p.Prompt)
		for _, f := range p.Fields {
			fmt.Fprintf(w, "  field %s (%s): %s\n", f.Name, f.Type, f.Prompt)
		}
	}
	if p.TimeoutAt != nil {
		fmt.Fprintf(w, "  answer before %s (the step's timeout; then it fails)\n", p.TimeoutAt.Format(time.RFC3339))
	}
	fmt.Fprintf(w, "token (expires %s): %s\n", p.ExpiresAt.Format(time.RFC3339), p.Token)
}
