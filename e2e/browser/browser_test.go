// Package browser drives the dashboard of `stepwise serve --http` in
// Chromium (chromedp): sign in, answer a question in the page, watch a run
// finish without a reload, filter the runs, check the graph's step
// statuses, the forms' labels and keyboard use, and that no page logs an
// error. Screenshots of each page go to $STEPWISE_ARTIFACTS (or the
// test's temporary directory).
//
// It runs when STEPWISE_BROWSER_TEST=1 (CI sets it; it needs
// /usr/bin/chromium or $STEPWISE_CHROMIUM).
package browser

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const token = "browser-test-token-0123456789"

var workflows = map[string]string{
	"greet.yaml": `version: 1
name: greet
title: Greet someone
steps:
  - id: name
    ask:
      prompt: What is your name?
      type: string
      max: 100
  - id: mood
    ask:
      prompt: How are you?
      type: choice
      choices: [good, fine, tired]
  - id: hello
    uses: noop
outputs:
  name: ${{ steps.name.answer }}
  mood: ${{ steps.mood.answer }}
`,
	"nap.yaml": `version: 1
name: nap
title: A short nap
steps:
  - id: nap
    sleep: 3s
  - id: wake
    uses: noop
`,
}

// server is a running `stepwise serve --http`.
type server struct {
	url string
	cs  *mcp.ClientSession
}

func startServer(t *testing.T) *server {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "stepwise")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/stepwise")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(filepath.Join(home, "workflows"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, src := range workflows {
		if err := os.WriteFile(filepath.Join(home, "workflows", name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "--home", home, "serve", "--http", "127.0.0.1:0", "--auth-token", token)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	urls := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`serving MCP at (\S+)/mcp`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
	}()
	s := &server{}
	select {
	case s.url = <-urls:
	case <-time.After(60 * time.Second):
		t.Fatal("the server did not start")
	}
	hc := &http.Client{Transport: bearer{http.DefaultTransport}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "browser-test", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: s.url + "/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	s.cs = cs
	return s
}

type bearer struct{ rt http.RoundTripper }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+token)
	return b.rt.RoundTrip(r)
}

// startRun starts a library workflow over MCP and returns the run's id.
func (s *server) startRun(t *testing.T, name string) string {
	t.Helper()
	zero := 0.0
	res, err := s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_start", Arguments: map[string]any{"workflow": name, "wait_seconds": zero}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.RunID == "" {
		t.Fatalf("run_start: %s", b)
	}
	return out.RunID
}

func chromium() string {
	if p := os.Getenv("STEPWISE_CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

// browser is a headless Chromium tab that records console errors.
type browser struct {
	t      *testing.T
	ctx    context.Context
	dir    string // screenshots
	mu     sync.Mutex
	errors []string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium()),
		chromedp.NoSandbox,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelT(); cancel(); cancelA() })
	dir := os.Getenv("STEPWISE_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b := &browser{t: t, ctx: ctx, dir: dir}
	chromedp.ListenTarget(ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.APITypeError || ev.Type == runtime.APITypeWarning {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value))
				}
				b.errors = append(b.errors, "console."+string(ev.Type)+": "+strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			b.errors = append(b.errors, "exception: "+ev.ExceptionDetails.Error())
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.LevelError || ev.Entry.Level == cdplog.LevelWarning {
				b.errors = append(b.errors, "log: "+ev.Entry.Text+" "+ev.Entry.URL)
			}
		}
	})
	if err := chromedp.Run(ctx, cdplog.Enable(), runtime.Enable()); err != nil {
		t.Fatalf("start chromium (%s): %v", chromium(), err)
	}
	return b
}

func (b *browser) run(what string, actions ...chromedp.Action) {
	b.t.Helper()
	start := time.Now()
	if err := chromedp.Run(b.ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
	if d := time.Since(start); d > 2*time.Second {
		b.t.Logf("%s took %s", what, d.Round(time.Millisecond))
	}
}

// shot saves a full-page screenshot as name.png.
func (b *browser) shot(name string) {
	b.t.Helper()
	var png []byte
	b.run("screenshot "+name, chromedp.FullScreenshot(&png, 100))
	path := filepath.Join(b.dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s", path)
}

func (b *browser) location() string {
	var loc string
	b.run("location", chromedp.Location(&loc))
	return loc
}

// checkLabels fails on a visible form control without a label.
func (b *browser) checkLabels(page string) {
	b.t.Helper()
	var unlabeled []string
	b.run("labels", chromedp.Evaluate(`Array.from(document.querySelectorAll("input, select, textarea"))
		.filter(e => e.type !== "hidden" && !(e.labels && e.labels.length) && !e.getAttribute("aria-label"))
		.map(e => e.outerHTML)`, &unlabeled))
	if len(unlabeled) > 0 {
		b.t.Errorf("%s: controls without a label: %v", page, unlabeled)
	}
}

func (b *browser) text(sel string) string {
	var s string
	b.run("text of "+sel, chromedp.Text(sel, &s, chromedp.ByQuery))
	return strings.TrimSpace(s)
}

func (b *browser) attr(sel, name string) string {
	var v string
	var ok bool
	b.run("attribute "+name+" of "+sel, chromedp.AttributeValue(sel, name, &v, &ok, chromedp.ByQuery))
	return v
}

// markPage marks the page shown; newPage selects the body of a page loaded
// after it.
var markPage = chromedp.Evaluate(`document.body.dataset.old = "1"`, nil)

const newPage = "body:not([data-old])"

func TestDashboard(t *testing.T) {
	if os.Getenv("STEPWISE_BROWSER_TEST") != "1" {
		t.Skip("set STEPWISE_BROWSER_TEST=1 (needs Chromium)")
	}
	if _, err := os.Stat(chromium()); err != nil {
		t.Fatalf("no Chromium at %s (apt-get install chromium, or set STEPWISE_CHROMIUM)", chromium())
	}
	begin := time.Now()
	s := startServer(t)
	t.Logf("server built and started in %s", time.Since(begin).Round(time.Millisecond))
	b := newBrowser(t)
	defer func() { t.Logf("browser part took %s", time.Since(begin).Round(time.Millisecond)) }()
	greet := s.startRun(t, "greet")

	// Sign in: anonymous visitors land on the login page; the token is
	// typed and sent with Enter.
	b.run("open the run", chromedp.Navigate(s.url+"/runs/"+greet), chromedp.WaitVisible("#token", chromedp.ByID))
	if loc := b.location(); !strings.Contains(loc, "/login?next=") {
		t.Fatalf("anonymous visit went to %s, want the login page", loc)
	}
	b.checkLabels("login")
	b.shot("login")
	b.run("sign in", chromedp.SendKeys("#token", token, chromedp.ByID), chromedp.SendKeys("#token", kb.Enter, chromedp.ByID),
		chromedp.WaitVisible("#answer-form", chromedp.ByID))
	if loc := b.location(); loc != s.url+"/runs/"+greet {
		t.Fatalf("after sign-in at %s, want the run's page", loc)
	}

	// The question, in the page; the graph shows the step waiting.
	if st := b.attr(`#graph [data-step="name"]`, "data-status"); st != "waiting" {
		t.Errorf("graph: step name is %q, want waiting", st)
	}
	b.checkLabels("run with a question")
	b.shot("run-question")
	// Keyboard only: focus the field, type, Tab to the button, Enter.
	b.run("answer the name", chromedp.Focus("#f-value", chromedp.ByID), chromedp.KeyEvent("Ada Lovelace"), chromedp.KeyEvent(kb.Tab))
	var focused string
	b.run("focus", chromedp.Evaluate(`document.activeElement.tagName + ":" + document.activeElement.type`, &focused))
	if focused != "BUTTON:submit" {
		t.Errorf("Tab from the answer went to %s, want the submit button", focused)
	}
	b.run("submit with Enter", markPage, chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(newPage+` input[name="value"][type="radio"]`, chromedp.ByQuery))
	if st := b.attr(`#graph [data-step="name"]`, "data-status"); st != "succeeded" {
		t.Errorf("graph after the answer: step name is %q, want succeeded", st)
	}
	// A choice: radio buttons in a fieldset; Space picks, Enter sends.
	b.run("pick a mood", chromedp.Focus(`input[name="value"][value="fine"]`, chromedp.ByQuery), chromedp.KeyEvent(" "),
		chromedp.Click(`#answer-form button[type="submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#run-status .status-succeeded`, chromedp.ByQuery))
	if out := b.text("#outputs"); !strings.Contains(out, "Ada Lovelace") || !strings.Contains(out, "fine") {
		t.Errorf("outputs %q", out)
	}
	for _, step := range []string{"name", "mood", "hello"} {
		if st := b.attr(`#graph [data-step="`+step+`"]`, "data-status"); st != "succeeded" {
			t.Errorf("graph: step %s is %q, want succeeded", step, st)
		}
	}
	b.shot("run-succeeded")

	// A running run turns succeeded without a reload.
	nap := s.startRun(t, "nap")
	b.run("open the running run", chromedp.Navigate(s.url+"/runs/"+nap), chromedp.WaitVisible("#run-status", chromedp.ByID))
	if st := b.text("#run-status"); st != "running" {
		t.Errorf("the nap run shows %q at first, want running", st)
	}
	if st := b.attr(`#graph [data-step="nap"]`, "data-status"); st != "running" && st != "pending" {
		t.Errorf("graph: nap is %q at first", st)
	}
	b.shot("run-running")
	var marked bool
	b.run("mark the page", chromedp.Evaluate(`window.stepwiseMarker = 42; true`, &marked))
	b.run("wait for the end", chromedp.WaitVisible(`#run-status .status-succeeded`, chromedp.ByQuery))
	var marker int
	b.run("the same page", chromedp.Evaluate(`window.stepwiseMarker || 0`, &marker))
	if marker != 42 {
		t.Error("the page was reloaded to show the end of the run")
	}
	for _, step := range []string{"nap", "wake"} {
		if st := b.attr(`#graph [data-step="`+step+`"]`, "data-status"); st != "succeeded" {
			t.Errorf("graph (live): step %s is %q, want succeeded", step, st)
		}
	}
	var items int
	b.run("timeline", chromedp.Evaluate(`document.querySelectorAll("#timeline li").length`, &items))
	if items < 4 {
		t.Errorf("the timeline has %d events", items)
	}

	// The runs list filters: by workflow, typed, sent with Enter.
	waiting := s.startRun(t, "greet")
	b.run("runs", chromedp.Navigate(s.url+"/runs"), chromedp.WaitVisible("table.runs", chromedp.ByQuery))
	b.checkLabels("runs")
	b.shot("runs")
	b.run("filter by workflow", markPage, chromedp.SendKeys("#workflow", "nap", chromedp.ByID), chromedp.SendKeys("#workflow", kb.Enter, chromedp.ByID),
		chromedp.WaitVisible(newPage+" table.runs", chromedp.ByQuery))
	var ids []string
	rows := `Array.from(document.querySelectorAll("table.runs tbody td:first-child a")).map(a => a.textContent)`
	b.run("rows", chromedp.Evaluate(rows, &ids))
	if len(ids) != 1 || ids[0] != nap {
		t.Errorf("filtered by workflow nap: %v, want [%s]", ids, nap)
	}
	b.run("filter by status", chromedp.Navigate(s.url+"/runs"), chromedp.WaitVisible("table.runs", chromedp.ByQuery), markPage,
		chromedp.Click(`input[name="status"][value="waiting"]`, chromedp.ByQuery), chromedp.Click(`.filters button[type="submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible(newPage+" table.runs", chromedp.ByQuery), chromedp.Evaluate(rows, &ids))
	if len(ids) != 1 || ids[0] != waiting {
		t.Errorf("filtered by status waiting: %v, want [%s]", ids, waiting)
	}
	b.shot("runs-filtered")

	// The other pages render, labelled, without errors.
	for name, path := range map[string]string{"workflows": "/workflows", "workflow": "/workflows/greet", "catalogs": "/catalogs",
		"actions": "/actions?q=http", "control": "/runs/" + waiting + "/control?action=cancel"} {
		b.run(name, chromedp.Navigate(s.url+path), chromedp.WaitVisible("h1", chromedp.ByQuery))
		var status int
		b.run("status", chromedp.Evaluate(`document.querySelectorAll("main h1").length`, &status))
		b.checkLabels(name)
		b.shot(name)
	}
	// The cancel is confirmed with the keyboard: Space ticks, Enter sends.
	b.run("cancel", chromedp.Navigate(s.url+"/runs/"+waiting+"/control?action=cancel"), chromedp.WaitVisible("#confirm", chromedp.ByID),
		chromedp.Focus("#confirm", chromedp.ByID), chromedp.KeyEvent(" "),
		chromedp.Click(`main form button[type="submit"]`, chromedp.ByQuery), chromedp.WaitVisible(`#run-status .status-canceled`, chromedp.ByQuery))

	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.errors) > 0 {
		t.Errorf("the pages logged errors:\n%s", strings.Join(b.errors, "\n"))
	}
}
