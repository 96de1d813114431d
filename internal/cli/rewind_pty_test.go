//go:build linux

package cli

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// TestTerminalRewindPrefillsEarlierAnswers: `stepwise rewind` asks again in
// the terminal with the earlier answers typed in and marked as such; Enter
// keeps one, typing changes it.
func TestTerminalRewindPrefillsEarlierAnswers(t *testing.T) {
	home := t.TempDir()
	wf := write(t, "two.yaml", `version: 1
name: two
steps:
  - id: q1
    ask: {prompt: "First-one?"}
  - id: q2
    ask: {prompt: "Second-one?"}
outputs:
  both: ${{ steps.q1.answer }}-${{ steps.q2.answer }}
`)
	answers := write(t, "a.yaml", "q1: ada\nq2: bob\n")
	code, out, errOut := runOut(t, home, "run", wf, "--answers", answers, "--json")
	if code != ExitOK {
		t.Fatalf("run: %d %s %s", code, out, errOut)
	}
	id := decodeRun(t, out).RunID

	p := startPty(t, "--home", home, "rewind", id, "q1", "--json")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := p.waitFor(ctx, "First-one?"); err != nil {
		t.Fatal(err)
	}
	if err := p.waitFor(ctx, previousNote); err != nil {
		t.Fatal(err)
	}
	p.typeText("\r") // keep "ada"
	if err := p.waitFor(ctx, "Second-one?"); err != nil {
		t.Fatal(err)
	}
	p.typeText("by\r") // "bob" becomes "bobby"
	code, err := p.wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got runJSON
	if code != ExitOK || json.Unmarshal(p.stdout.Bytes(), &got) != nil || got.Outputs["both"] != "ada-bobby" || got.RunID == id {
		t.Fatalf("exit %d: %s", code, p.stdout.String())
	}
}
