package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/expr"
	"stepwise.dev/stepwise/internal/mcpserver"
	"stepwise.dev/stepwise/internal/secret"
	"stepwise.dev/stepwise/internal/service"
	"stepwise.dev/stepwise/internal/workflow"
)

// remoteOptions are the flags that make run and resume a client of an MCP
// server instead of running the workflow in this process.
type remoteOptions struct {
	server    string // streamable HTTP endpoint
	serverCmd string // a stdio server to start
	session   string // the session file
}

func (r *remoteOptions) flags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&r.server, "server", "", "run through the MCP server at this streamable HTTP URL (bearer token from $STEPWISE_TOKEN)")
	cmd.Flags().StringVar(&r.serverCmd, "server-cmd", "", "run through a stdio MCP server this command starts (e.g. 'stepwise serve --stateless'; split on spaces)")
	cmd.Flags().StringVar(&r.session, "session", "", "the session file of a run through a server (default "+defaultSessionFile+")")
}

func (r *remoteOptions) remote() bool { return r.server != "" || r.serverCmd != "" }

// remoteWait is how long one call lets the server wait for a run.
const remoteWait = 20.0

// remoteClient is a connection to the server that runs the workflow, and
// the session file it keeps up to date.
type remoteClient struct {
	cs      *mcp.ClientSession
	sess    *remoteSession
	path    string
	secure  bool // answers may cross: TLS, loopback or a process we started
	errOut  io.Writer
	quiet   bool // --json: no progress lines
	stderr  *tailBuffer
	calls   int
	printMu sync.Mutex
	// root is the run's id as the progress handler reads it.
	root atomic.Value
	// lastLine is when the last progress line was printed or the last
	// call returned (UnixNano).
	lastLine atomic.Int64
}

// settle lets the progress lines of the events a call's result follows
// be printed before what comes next: the SDK hands notifications to their
// handler in order but on a goroutine of its own, so a result can arrive
// while the last lines are still queued. It waits until no line came for
// a moment since the call returned (at most settleMax): a wait on timing,
// as the SDK gives the client no way to know the last line came.
func (c *remoteClient) settle() {
	if c.quiet {
		return
	}
	// Quiet is counted from the call's return too: the handler of its
	// last notifications may not have run yet at all.
	const quiet, settleMax = 50 * time.Millisecond, time.Second
	for start := time.Now(); time.Since(start) < settleMax; {
		last := max(c.lastLine.Load(), start.UnixNano())
		if time.Since(time.Unix(0, last)) >= quiet {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// tailBuffer keeps the last bytes a started server wrote to its stderr,
// to show when it fails.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > 4096 {
		t.buf = t.buf[len(t.buf)-4096:]
	}
	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

// bearer adds the Authorization header to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// secureURL tells whether what is sent to u stays private: TLS, or a
// loopback address.
func secureURL(u *url.URL) bool {
	if u.Scheme == "https" {
		return true
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// connectRemote connects to the session's server: streamable HTTP or a
// stdio server it starts.
func connectRemote(ctx context.Context, cmd *cobra.Command, sess *remoteSession, path string, quiet bool) (*remoteClient, error) {
	c := &remoteClient{sess: sess, path: path, errOut: cmd.ErrOrStderr(), quiet: quiet}
	var transport mcp.Transport
	switch {
	case sess.Server != "" && sess.ServerCmd != "":
		return nil, usageErr("give --server or --server-cmd, not both")
	case sess.Server != "":
		u, err := url.Parse(sess.Server)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, usageErr("--server %q: give an http:// or https:// URL of an MCP endpoint", sess.Server)
		}
		c.secure = secureURL(u)
		var rt http.RoundTripper = http.DefaultTransport
		if tok := os.Getenv("STEPWISE_TOKEN"); tok != "" {
			if !c.secure {
				return nil, usageErr("--server %s: the bearer token of $STEPWISE_TOKEN would cross the network in clear: use https://", sess.Server)
			}
			rt = bearer{token: tok, next: rt}
		}
		transport = &mcp.StreamableClientTransport{Endpoint: sess.Server, HTTPClient: &http.Client{Transport: rt}, MaxRetries: 2}
	default:
		args := strings.Fields(sess.ServerCmd)
		if len(args) == 0 {
			return nil, usageErr("--server-cmd: give the command that starts a stdio MCP server")
		}
		c.secure = true // our own child, over pipes
		c.stderr = &tailBuffer{}
		x := exec.Command(args[0], args[1:]...)
		x.Stderr = c.stderr
		transport = &mcp.CommandTransport{Command: x, TerminateDuration: 2 * time.Second}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "stepwise-terminal", Version: Version}, &mcp.ClientOptions{
		Capabilities:                &mcp.ClientCapabilities{Experimental: map[string]any{mcpserver.EventsOptIn: map[string]any{}}},
		ProgressNotificationHandler: c.onProgress,
	})
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return nil, c.connErr(err)
	}
	c.cs = cs
	return c, nil
}

// connErr is an error reaching the server, with what a started server
// said last.
func (c *remoteClient) connErr(err error) error {
	where := c.sess.Server
	if where == "" {
		where = c.sess.ServerCmd
	}
	msg := fmt.Sprintf("server %s: %v", where, err)
	if c.sess.Server != "" && os.Getenv("STEPWISE_TOKEN") == "" {
		msg += " ($STEPWISE_TOKEN is not set: a server started with --auth-token needs it)"
	}
	if c.stderr != nil {
		if s := c.stderr.String(); s != "" {
			msg += "\nthe server said: " + s
		}
	}
	return &exitError{code: ExitUsage, msg: msg}
}

func (c *remoteClient) close() {
	if c.cs != nil {
		_ = c.cs.Close()
	}
}

// onProgress prints the typed run events (mcpserver.EventMetaKey) as the
// local run prints its progress lines.
func (c *remoteClient) onProgress(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
	raw, ok := r.Params.Meta[mcpserver.EventMetaKey]
	if !ok || c.quiet {
		return
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return
	}
	var ev service.Event
	if json.Unmarshal(b, &ev) != nil {
		return
	}
	depth := 0
	if root, _ := c.root.Load().(string); root != "" && ev.RunID != root {
		depth = 1 // a sub-workflow's run
	}
	c.printMu.Lock()
	defer c.printMu.Unlock()
	progressLine(c.errOut, ev, depth)
	c.lastLine.Store(time.Now().UnixNano())
}

// remoteResult is the run shape of run_start, run_continue and run_get,
// with the state of a stateless server kept opaque.
type remoteResult struct {
	RunID   string          `json:"run_id"`
	Status  string          `json:"status"`
	Outputs map[string]any  `json:"outputs,omitempty"`
	Pause   json.RawMessage `json:"pause,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
	State   json.RawMessage `json:"state,omitempty"`
}

// remotePause is a pause as the prompt needs it, and where a secret goes.
type remotePause struct {
	service.Pause
	SecretURL string `json:"secret_url,omitempty"`
}

// toolErr is a tool's error result.
type toolErr struct{ mcpserver.ToolError }

func (e *toolErr) Error() string {
	msg := e.ErrorCode + ": " + e.Message
	for _, v := range e.Violations {
		msg += "\n  " + v.Message
	}
	if e.SuggestedAction != "" {
		msg += "\n  " + e.SuggestedAction
	}
	return msg
}

// call calls a tool with typed events asked for, and decodes its run
// shape; the session file is written after every call that returned one.
func (c *remoteClient) call(ctx context.Context, name string, args map[string]any) (*remoteResult, error) {
	c.calls++
	params := &mcp.CallToolParams{Name: name, Arguments: args,
		Meta: mcp.Meta{"progressToken": fmt.Sprintf("stepwise-%d", c.calls), mcpserver.EventsOptIn: true}}
	res, err := c.cs.CallTool(ctx, params)
	c.lastLine.Store(time.Now().UnixNano())
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, c.connErr(err)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return nil, err
	}
	if res.IsError {
		te := &toolErr{}
		if json.Unmarshal(b, &te.ToolError) != nil || te.ErrorCode == "" {
			te.ErrorCode, te.Message = "TOOL_ERROR", resultText(res)
		}
		return nil, te
	}
	var r remoteResult
	if err := json.Unmarshal(b, &r); err != nil || r.RunID == "" {
		return nil, &exitError{code: ExitUsage, msg: fmt.Sprintf("%s: the server's result is not a run: %s", name, resultText(res))}
	}
	if err := c.record(&r); err != nil {
		return nil, err
	}
	return &r, nil
}

func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, ct := range res.Content {
		if t, ok := ct.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, " ")
}

// record keeps a result in the session file.
func (c *remoteClient) record(r *remoteResult) error {
	s := c.sess
	s.RunID, s.Status, s.Token, s.Pause = r.RunID, r.Status, "", nil
	c.root.Store(r.RunID)
	if len(r.State) > 0 && string(r.State) != "null" {
		s.State = r.State
	}
	if p, err := r.pause(); err == nil && p != nil {
		s.Token, s.Pause = p.Token, &p.Pause
	}
	return saveSession(c.path, s)
}

func (r *remoteResult) pause() (*remotePause, error) {
	if len(r.Pause) == 0 || string(r.Pause) == "null" {
		return nil, nil
	}
	var p remotePause
	if err := json.Unmarshal(r.Pause, &p); err != nil {
		return nil, fmt.Errorf("the server's pause: %w", err)
	}
	return &p, nil
}

// view is the result as the local run's printing takes it.
func (r *remoteResult) view() *service.RunView {
	v := &service.RunView{ID: r.RunID, Status: r.Status, Outputs: r.Outputs, Error: r.Error}
	if p, _ := r.pause(); p != nil {
		v.Pause = &p.Pause
	}
	return v
}

// runRemote is `run --server|--server-cmd FILE|NAME`.
func runRemote(cmd *cobra.Command, o *runOptions, ro *remoteOptions, ref string) error {
	ctx, stop, interrupted := signalContext()
	defer stop()
	path := ro.sessionPath()
	sess := &remoteSession{Server: ro.server, ServerCmd: ro.serverCmd}
	answers, err := readAnswers(o.answers)
	if err != nil {
		return err
	}
	text, err := textInputs(o.inputs)
	if err != nil {
		return err
	}
	c, err := connectRemote(ctx, cmd, sess, path, o.asJSON)
	if err != nil {
		return err
	}
	defer c.close()
	args := map[string]any{"wait_seconds": remoteWait}
	var wf *workflow.Workflow
	if data, rerr := os.ReadFile(ref); rerr == nil {
		args["definition"] = string(data)
		wf, _, _ = workflow.Load(data, workflow.Options{})
	} else {
		args["workflow"] = ref
		wf = c.libraryWorkflow(ctx, ref)
	}
	if wf == nil {
		wf = &workflow.Workflow{} // inputs go as text; the server checks them
	}
	inputs := service.TypedInputs(wf, nil, text)
	if extra, ok := answers[service.AnswersInputsKey].(map[string]any); ok {
		for k, v := range extra {
			if _, set := inputs[k]; !set {
				inputs[k] = v
			}
		}
		delete(answers, service.AnswersInputsKey)
	}
	if len(inputs) > 0 {
		args["inputs"] = inputs
	}
	r, err := c.call(ctx, "run_start", args)
	if err != nil {
		return c.failed(err, interrupted)
	}
	return c.drive(ctx, cmd, o, r, answers, interrupted)
}

// libraryWorkflow reads a library workflow's declarations from the
// server, to type -i values; nil when the server does not say.
func (c *remoteClient) libraryWorkflow(ctx context.Context, name string) *workflow.Workflow {
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "workflow_get", Arguments: map[string]any{"name": name}})
	if err != nil || res.IsError {
		return nil
	}
	b, _ := json.Marshal(res.StructuredContent)
	var d struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(b, &d) != nil || d.Content == "" {
		return nil
	}
	wf, _, _ := workflow.Load([]byte(d.Content), workflow.Options{})
	return wf
}

func (ro *remoteOptions) sessionPath() string {
	if ro.session != "" {
		return ro.session
	}
	return defaultSessionFile
}

// resumeRemote is `resume --session FILE`: it continues the session's run
// in this process. A state kept (a stateless server) is continued from;
// else the run is read again (run_get) for its open pause and a fresh
// token.
func resumeRemote(cmd *cobra.Command, o *runOptions, ro *remoteOptions) error {
	ctx, stop, interrupted := signalContext()
	defer stop()
	path := ro.sessionPath()
	sess, err := loadSession(path)
	if err != nil {
		return err
	}
	if ro.server != "" || ro.serverCmd != "" { // the server moved
		sess.Server, sess.ServerCmd = ro.server, ro.serverCmd
	}
	answers, err := readAnswers(o.answers)
	if err != nil {
		return err
	}
	c, err := connectRemote(ctx, cmd, sess, path, o.asJSON)
	if err != nil {
		return err
	}
	defer c.close()
	var r *remoteResult
	if len(sess.State) > 0 { // a stateless server: the session holds the run
		r = &remoteResult{RunID: sess.RunID, Status: sess.Status, State: sess.State}
		if sess.Pause != nil {
			r.Pause, _ = json.Marshal(remotePause{Pause: *sess.Pause})
		}
	} else {
		r, err = c.call(ctx, "run_get", map[string]any{"run_id": sess.RunID})
		if err != nil {
			return c.failed(err, interrupted)
		}
	}
	return c.drive(ctx, cmd, o, r, answers, interrupted)
}

// failed is a call's error as the command's.
func (c *remoteClient) failed(err error, interrupted func() bool) error {
	if interrupted() || errors.Is(err, context.Canceled) {
		return c.interrupted()
	}
	var te *toolErr
	if errors.As(err, &te) {
		code := ExitInvalid
		if te.Category == "internal" || te.Category == "auth" {
			code = ExitUsage
		}
		return &exitError{code: code, msg: te.Error()}
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee
	}
	return &exitError{code: ExitUsage, msg: err.Error()}
}

func (c *remoteClient) interrupted() error {
	return &exitError{code: ExitInterrupted, msg: "interrupted; the run stays resumable: stepwise resume --session " + c.path}
}

// drive follows the run through the server to its end: it answers its
// pauses (answers file, then the terminal) with run_continue, follows a
// running run with run_get, and prints the outcome as the local run
// does, with the same exit codes.
func (c *remoteClient) drive(ctx context.Context, cmd *cobra.Command, o *runOptions, r *remoteResult, answers map[string]any, interrupted func() bool) error {
	c.root.Store(r.RunID)
	p := o.prompter
	if p == nil && !o.noInput && isTerminal(os.Stdin) && isTerminal(os.Stderr) {
		in, err := openTerminalInput(os.Stdin)
		if err != nil {
			return &exitError{code: ExitUsage, msg: fmt.Sprintf("terminal: %v", err)}
		}
		defer in.close()
		p = terminalPrompter{out: c.errOut, in: in}
	}
	asked := map[string]bool{} // the pauses (by token) the answers file answered
	for {
		switch r.Status {
		case code.StatusRunning, code.StatusPending:
			var err error
			if len(r.State) > 0 { // a stateless server goes on from the state
				r, err = c.call(ctx, "run_continue", map[string]any{"state": r.State, "wait_seconds": remoteWait})
			} else {
				r, err = c.call(ctx, "run_get", map[string]any{"run_id": r.RunID, "wait_seconds": remoteWait})
			}
			if err != nil {
				return c.failed(err, interrupted)
			}
			continue
		case code.StatusWaiting:
		default:
			return c.outcome(cmd, o, r)
		}
		pause, err := r.pause()
		if err != nil {
			return &exitError{code: ExitUsage, msg: err.Error()}
		}
		if pause == nil { // a sub-workflow or a timer
			if len(r.State) > 0 {
				return c.outcome(cmd, o, r)
			}
			if r, err = c.call(ctx, "run_get", map[string]any{"run_id": r.RunID, "wait_seconds": remoteWait}); err != nil {
				return c.failed(err, interrupted)
			}
			continue
		}
		c.settle()
		value, fromFile := answers[pause.StepID]
		if fromFile && asked[pause.Token] {
			fromFile = false // the file's value was refused: ask instead
		}
		if !fromFile {
			if p == nil {
				return c.outcome(cmd, o, r)
			}
			if value, err = p.ask(ctx, &pause.Pause); err != nil {
				if interrupted() || errors.Is(err, errAborted) {
					return c.interrupted()
				}
				return describe(err)
			}
		}
		asked[pause.Token] = true
		next, err := c.answer(ctx, r, pause, value)
		if err != nil {
			var te *toolErr
			if errors.As(err, &te) && te.ErrorCode == code.AnswerInvalid {
				if p != nil {
					fmt.Fprintln(c.errOut, te.Error())
					continue // asked again
				}
				if fromFile {
					if o.asJSON {
						_ = writeJSON(cmd.OutOrStdout(), runResult{RunID: r.RunID, Status: r.Status, Pause: &pause.Pause})
					}
					return &exitError{code: ExitInvalid, msg: fmt.Sprintf("answers file %s: step %s: %s; the run is left waiting: correct the answer, then: stepwise resume --session %s --answers %s",
						o.answers, pause.StepID, te.Error(), c.path, o.answers)}
				}
			}
			return c.failed(err, interrupted)
		}
		r = next
	}
}

// answer sends a pause's answer. A secret typed in the terminal (not a
// "$NAME" reference) goes to the pause's one-time secret page, which the
// server offers so that a secret never passes through an agent's
// channel; only over TLS or loopback.
func (c *remoteClient) answer(ctx context.Context, r *remoteResult, p *remotePause, value any) (*remoteResult, error) {
	if hasSecretQuestion(&p.Pause) && !isEnvRef(value) {
		if err := c.postSecret(ctx, p, value); err != nil {
			return nil, err
		}
		return c.call(ctx, "run_get", map[string]any{"run_id": r.RunID, "wait_seconds": remoteWait})
	}
	args := map[string]any{"token": p.Token, "wait_seconds": remoteWait}
	if value != nil {
		args["value"] = value
	}
	if len(r.State) > 0 && string(r.State) != "null" {
		args["state"] = r.State
	}
	return c.call(ctx, "run_continue", args)
}

func hasSecretQuestion(p *service.Pause) bool {
	if p.Secret {
		return true
	}
	for _, f := range p.Fields {
		if f.Secret {
			return true
		}
	}
	return false
}

// isEnvRef tells whether an answer is a "$NAME" reference to the server's
// environment (for a form, every secret field's).
func isEnvRef(v any) bool {
	s, ok := v.(string)
	return ok && secret.IsEnvRef(s)
}

// errNoSecretPage: the server offers no way to take a secret from the
// person.
var errNoSecretPage = errors.New("no secret page")

// postSecret sends a secret answer to the pause's secret page.
func (c *remoteClient) postSecret(ctx context.Context, p *remotePause, value any) error {
	if p.SecretURL == "" {
		return &exitError{code: ExitInvalid, msg: fmt.Sprintf("step %s asks a secret and this server offers no secret page (%v: a stdio or stateless server): "+
			"answer $NAME, a variable of the server's environment that holds it, or run it through an HTTP server", p.StepID, errNoSecretPage)}
	}
	u, err := url.Parse(p.SecretURL)
	if err != nil || !c.secure || !secureURL(u) {
		return &exitError{code: ExitInvalid, msg: fmt.Sprintf("step %s asks a secret: it is sent only over TLS or to a loopback address, and %s is neither; nothing was sent", p.StepID, p.SecretURL)}
	}
	form := url.Values{}
	if len(p.Fields) == 0 {
		form.Set("value", expr.Text(value))
	} else if m, ok := value.(map[string]any); ok {
		for k, v := range m {
			if list, ok := v.([]any); ok {
				for _, x := range list {
					form.Add(k, expr.Text(x))
				}
				continue
			}
			form.Set(k, expr.Text(v))
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.SecretURL, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return &exitError{code: ExitUsage, msg: fmt.Sprintf("secret page: %v", err)}
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
		return nil
	case resp.StatusCode == http.StatusUnprocessableEntity:
		// The page lists what is wrong; the terminal asks again.
		te := &toolErr{}
		te.ErrorCode, te.Message = code.AnswerInvalid, "the secret page refused the answer: "+pageProblems(body)
		return te
	default:
		return &exitError{code: ExitInvalid, msg: fmt.Sprintf("secret page: %s: %s", resp.Status, pageProblems(body))}
	}
}

// pageProblems is the text of the secret page's problem paragraphs.
func pageProblems(body []byte) string {
	var out []string
	for _, part := range bytes.Split(body, []byte(`<p class="problem">`))[1:] {
		if end := bytes.Index(part, []byte("</p>")); end >= 0 {
			out = append(out, string(part[:end]))
		}
	}
	if len(out) == 0 {
		return "see the server's log"
	}
	return strings.Join(out, "; ")
}

// outcome prints the run's end or pause as the local run does, and says
// how to continue a waiting one.
func (c *remoteClient) outcome(cmd *cobra.Command, o *runOptions, r *remoteResult) error {
	c.settle()
	c.printMu.Lock()
	defer c.printMu.Unlock()
	v := r.view()
	if r.Status != code.StatusWaiting || o.asJSON {
		return printOutcome(cmd, o, v)
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "run %s: %s\n", v.ID, v.Status)
	if v.Pause != nil {
		printPause(w, v.Pause)
	}
	fmt.Fprintf(w, "continue it with: stepwise resume --session %s [--answers FILE]\n", c.path)
	return &exitError{code: ExitWaiting}
}
