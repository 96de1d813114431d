package service

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/home"
	"stepwise.dev/stepwise/internal/store"
)

const testKeyA = "0101010101010101010101010101010101010101010101010101010101010101"
const testKeyB = "0202020202020202020202020202020202020202020202020202020202020202"

// openStateless opens a stateless service on a fresh home with key (64 hex
// digits, as $STEPWISE_SECRET_KEY).
func openStateless(t *testing.T, key string) *Service {
	t.Helper()
	t.Setenv(home.EnvSecretKey, key)
	svc, err := Open(context.Background(), Options{Home: t.TempDir(), Stateless: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close(context.Background()) })
	return svc
}

// fiveQuestions asks five questions and outputs every answer.
const fiveQuestions = `version: 1
name: five
steps:
  - {id: q1, ask: {prompt: "First?", type: string}}
  - {id: q2, ask: {prompt: "Second, after ${{ steps.q1.answer }}?", type: string}}
  - {id: mid, uses: transform, with: {value: "${{ steps.q1.answer + '/' + steps.q2.answer }}"}}
  - {id: q3, ask: {prompt: "Third?", type: number}}
  - {id: q4, ask: {prompt: "Fourth?", type: boolean}}
  - {id: q5, ask: {prompt: "Fifth?", type: choice, choices: [red, green]}}
outputs:
  joined: ${{ steps.mid.output }}
  n: ${{ steps.q3.answer }}
  yes: ${{ steps.q4.answer }}
  color: ${{ steps.q5.answer }}
`

func mustParse(t *testing.T, svc *Service, def string) *Loaded {
	t.Helper()
	l, err := svc.Parse([]byte(def))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A five-question run completes through states alone, every call on the
// other of two services that share only the key; neither has a database.
func TestStatelessFiveQuestionsAcrossServices(t *testing.T) {
	ctx := context.Background()
	a, b := openStateless(t, testKeyA), openStateless(t, testKeyA)
	res, err := a.StartStateless(ctx, mustParse(t, a, fiveQuestions), nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	answers := []any{"x", "y", 3, true, "green"}
	for i, v := range answers {
		if res.View.Status != store.StatusWaiting || res.View.Pause == nil || res.View.Pause.StepID != fmt.Sprintf("q%d", i+1) {
			t.Fatalf("before answer %d: %+v", i+1, res.View)
		}
		svc := []*Service{b, a}[i%2]
		if res, err = svc.ContinueStateless(ctx, res.State, res.View.Pause.Token, v, 10*time.Second); err != nil {
			t.Fatalf("answer %d: %v", i+1, err)
		}
	}
	v := res.View
	if v.Status != store.StatusSucceeded || v.Outputs["joined"] != "x/y" || fmt.Sprint(v.Outputs["n"]) != "3" || v.Outputs["yes"] != true || v.Outputs["color"] != "green" {
		t.Fatalf("end: %s %v", v.Status, v.Outputs)
	}
	for _, svc := range []*Service{a, b} {
		if _, err := os.Stat(svc.Home.DBPath()); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a stateless service left %s: %v", svc.Home.DBPath(), err)
		}
		entries, _ := filepath.Glob(filepath.Join(svc.Home.Dir, "*.db*"))
		if len(entries) > 0 {
			t.Errorf("database files in the home: %v", entries)
		}
	}
}

// Every altered state is refused with STATE_INVALID, and changes nothing:
// the untouched state still continues.
func TestStatelessRefusesTampering(t *testing.T) {
	ctx := context.Background()
	a := openStateless(t, testKeyA)
	res, err := a.StartStateless(ctx, mustParse(t, a, fiveQuestions), nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(res.State)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	bad := map[string]string{
		"empty":      "",
		"not base64": "!!!" + res.State,
		"truncated":  res.State[:len(res.State)/2],
		"header cut": enc(raw[:6]),
		"other text": enc([]byte("hello, this is not a state at all")),
		"too long":   strings.Repeat("A", MaxStateBytes+1),
	}
	for _, i := range []int{0, 5, len(raw) / 2, len(raw) - 1} {
		flipped := append([]byte(nil), raw...)
		flipped[i] ^= 0x40
		bad[fmt.Sprintf("byte %d flipped", i)] = enc(flipped)
	}
	// The version in the header changed (it is bound into the sealing).
	swapped := append([]byte(nil), raw...)
	if j := strings.Index(string(swapped), "sha256:"); j > 0 {
		swapped[j+7] ^= 1
		bad["version changed"] = enc(swapped)
	} else {
		t.Fatal("no version in the state's header")
	}
	for what, st := range bad {
		_, err := a.ContinueStateless(ctx, st, res.View.Pause.Token, "x", time.Second)
		if engine.CodeOf(err) != CodeStateInvalid {
			t.Errorf("%s: %v, want %s", what, err, CodeStateInvalid)
		}
		if _, err := a.RestoreStateless(ctx, st); engine.CodeOf(err) != CodeStateInvalid {
			t.Errorf("restore %s: %v", what, err)
		}
	}
	// Another server key.
	other := openStateless(t, testKeyB)
	if _, err := other.ContinueStateless(ctx, res.State, res.View.Pause.Token, "x", time.Second); engine.CodeOf(err) != CodeStateInvalid {
		t.Errorf("another key: %v", err)
	}
	// A token of another run's state.
	res2, err := a.StartStateless(ctx, mustParse(t, a, fiveQuestions), nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var ee *engine.Error
	if _, err := a.ContinueStateless(ctx, res.State, res2.View.Pause.Token, "x", time.Second); !errors.As(err, &ee) || ee.Code != engine.CodeTokenInvalid || ee.Argument != "token" {
		t.Errorf("a token of another run: %v", err)
	}
	// The original still works.
	next, err := a.ContinueStateless(ctx, res.State, res.View.Pause.Token, "x", 10*time.Second)
	if err != nil || next.View.Pause == nil || next.View.Pause.StepID != "q2" {
		t.Fatalf("the untouched state: %v %+v", err, next)
	}
}

// A state whose workflow version this server loads as another version is
// refused with STATE_VERSION_MISMATCH, naming both.
func TestStatelessVersionMismatch(t *testing.T) {
	ctx := context.Background()
	a := openStateless(t, testKeyA)
	res, err := a.StartStateless(ctx, mustParse(t, a, fiveQuestions), nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.stateless.openState(res.State)
	if err != nil {
		t.Fatal(err)
	}
	// As a server whose build computed another version would have sealed it.
	const foreign = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
	real := p.Version
	p.Version = foreign
	for i := range p.Snapshot.Versions {
		p.Snapshot.Versions[i].Version = foreign
	}
	for i := range p.Snapshot.Runs {
		p.Snapshot.Runs[i].Run.Version = foreign
	}
	st, err := a.stateless.sealState(p)
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.ContinueStateless(ctx, st, res.View.Pause.Token, "x", time.Second)
	var ee *engine.Error
	if !errors.As(err, &ee) || ee.Code != CodeStateVersionMismatch || ee.ExpectedVersion != foreign || ee.CurrentVersion != real {
		t.Fatalf("foreign version: %v (%+v)", err, ee)
	}
}

// A workflow that needs server storage is refused before anything runs.
func TestStatelessRefusesStorageFeatures(t *testing.T) {
	ctx := context.Background()
	a := openStateless(t, testKeyA)
	for what, steps := range map[string]string{
		"sleep":        "  - {id: s, sleep: 1h}\n",
		"sub-workflow": "  - {id: s, workflow: other}\n",
		"retry":        "  - {id: s, uses: noop, retry: {attempts: 3, backoff: 1s}}\n",
		"ask timeout":  "  - {id: s, ask: {prompt: hi, type: string}, timeout: 1h}\n",
		"nested sleep": "  - id: g\n    parallel:\n      - {id: s, sleep: 1h}\n",
		"concurrency":  "",
	} {
		head := "version: 1\nname: w\n"
		if what == "concurrency" {
			head += "concurrency: {limit: 1}\n"
		}
		l, err := a.Parse([]byte(head + "steps:\n  - {id: first, uses: noop}\n" + steps))
		if err != nil {
			if what == "sub-workflow" { // refused already: no such workflow here
				continue
			}
			t.Fatalf("%s: %v", what, err)
		}
		_, err = a.StartStateless(ctx, l, nil, time.Second)
		var ee *engine.Error
		if !errors.As(err, &ee) || ee.Code != CodeNotStateless || ee.StepID == "" {
			t.Errorf("%s: %v", what, err)
		}
	}
	if _, err := a.PurgeRuns(ctx, PurgeFilter{}); engine.CodeOf(err) != CodeNotStateless {
		t.Errorf("purge: %v", err)
	}
	if _, err := a.StartRun(ctx, mustParse(t, a, fiveQuestions), nil, false); engine.CodeOf(err) != CodeNotStateless {
		t.Errorf("a stored run: %v", err)
	}
	if _, err := a.GetRun(ctx, "r"); engine.CodeOf(err) != CodeNotStateless {
		t.Errorf("get run: %v", err)
	}
	if _, _, err := a.ListRuns(ctx, store.RunFilter{}); engine.CodeOf(err) != CodeNotStateless {
		t.Errorf("list runs: %v", err)
	}
}

// run_restore gives the run as it stands: its question, the state
// unchanged; a question answered before (the state of an earlier call
// continued again) offers that answer.
func TestStatelessRestore(t *testing.T) {
	ctx := context.Background()
	a := openStateless(t, testKeyA)
	res, err := a.StartStateless(ctx, mustParse(t, a, fiveQuestions), nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r, err := a.RestoreStateless(ctx, res.State)
	if err != nil || r.State != res.State || r.View.Pause == nil || r.View.Pause.StepID != "q1" || r.View.Pause.Previous {
		t.Fatalf("restore: %v %+v", err, r)
	}
}

// A secret answered as $NAME stays sealed inside the state: nothing the
// state holds shows it in clear, and the run still uses it.
func TestStatelessSecretStaysSealed(t *testing.T) {
	ctx := context.Background()
	const pw = "hunter2-very-secret"
	t.Setenv("VAULT_PW", pw)
	a := openStateless(t, testKeyA)
	def := "version: 1\nname: vault\nsteps:\n  - {id: password, ask: {prompt: \"Password?\", type: string, secret: true}}\n  - {id: label, ask: {prompt: \"Label?\", type: string}}\noutputs:\n  length: ${{ declassify(len(steps.password.answer)) }}\n"
	res, err := a.StartStateless(ctx, mustParse(t, a, def), nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if res, err = a.ContinueStateless(ctx, res.State, res.View.Pause.Token, "$VAULT_PW", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	p, err := a.stateless.openState(res.State)
	if err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	for _, r := range p.Snapshot.Runs {
		fmt.Fprintf(&buf, "%s %s %s", r.Run.Inputs, r.Run.Outputs, r.Run.State)
		for _, s := range r.Steps {
			fmt.Fprintf(&buf, "%s %s", s.Output, s.Answer)
		}
		for _, q := range r.Pauses {
			fmt.Fprintf(&buf, "%s %s", q.Request, q.Answer)
		}
		for _, an := range r.Answers {
			fmt.Fprintf(&buf, "%s", an.Value)
		}
		for _, e := range r.Events {
			fmt.Fprintf(&buf, "%s", e.Data)
		}
	}
	if buf.Len() == 0 || strings.Contains(buf.String(), pw) {
		t.Fatalf("the secret is in clear in the state (%d bytes read)", buf.Len())
	}
	if res, err = a.ContinueStateless(ctx, res.State, res.View.Pause.Token, "x", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.View.Outputs["length"]) != fmt.Sprint(len(pw)) {
		t.Fatalf("outputs %v", res.View.Outputs)
	}
}

// A call that does not wait returns the run as it stands; a run left
// running goes on from its state with no token, to the same end.
func TestStatelessRunningStateGoesOn(t *testing.T) {
	ctx := context.Background()
	a := openStateless(t, testKeyA)
	def := "version: 1\nname: steps\nsteps:\n  - {id: a, uses: transform, with: {value: 1}}\n  - {id: b, uses: transform, with: {value: \"${{ steps.a.output + 1 }}\"}}\n  - {id: q, ask: {prompt: \"Done?\", type: boolean}}\noutputs:\n  b: ${{ steps.b.output }}\n"
	res, err := a.StartStateless(ctx, mustParse(t, a, def), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after a start that does not wait: %s", res.View.Status)
	for i := 0; res.View.Status != store.StatusWaiting; i++ {
		if i > 5 || (res.View.Status != store.StatusRunning && res.View.Status != store.StatusPending) {
			t.Fatalf("status %s after %d calls", res.View.Status, i)
		}
		if res, err = a.ContinueStateless(ctx, res.State, "", nil, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if res.View.Pause == nil || res.View.Pause.StepID != "q" {
		t.Fatalf("pause: %+v", res.View.Pause)
	}
	// With a pause open, a token is required.
	if _, err := a.ContinueStateless(ctx, res.State, "", nil, time.Second); engine.CodeOf(err) != CodeArgumentsInvalid {
		t.Fatalf("no token at a pause: %v", err)
	}
	if res, err = a.ContinueStateless(ctx, res.State, res.View.Pause.Token, true, 10*time.Second); err != nil || fmt.Sprint(res.View.Outputs["b"]) != "2" {
		t.Fatalf("end: %v %+v", err, res.View)
	}
}

// A run whose state would pass MaxStateBytes sealed is refused with
// STATE_TOO_LARGE; the state before it still serves.
func TestStatelessStateBounded(t *testing.T) {
	ctx := context.Background()
	a := openStateless(t, testKeyA)
	def := "version: 1\nname: big\nsteps:\n  - id: q\n    max_visits: 1000\n    ask: {prompt: \"More?\", type: string}\n  - id: again\n    switch:\n      - goto: q\n"
	res, err := a.StartStateless(ctx, mustParse(t, a, def), nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 96<<10)
	for i := 0; ; i++ {
		if i > 40 {
			t.Fatal("no STATE_TOO_LARGE after 40 answers of 128 KiB")
		}
		_, _ = rand.Read(chunk)
		next, err := a.ContinueStateless(ctx, res.State, res.View.Pause.Token, base64.StdEncoding.EncodeToString(chunk), 10*time.Second)
		if engine.CodeOf(err) == CodeStateTooLarge {
			break
		}
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		if len(next.State) > MaxStateBytes {
			t.Fatalf("a state of %d bytes", len(next.State))
		}
		res = next
	}
	if _, err := a.RestoreStateless(ctx, res.State); err != nil {
		t.Fatalf("the last state: %v", err)
	}
}
