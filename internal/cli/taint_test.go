package cli

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDerivedSecretsNotShown: `run` and `show` (human and --json) show the
// values a workflow computes from a secret input and a secret answer as
// ***, and the database file holds none of them in clear.
func TestDerivedSecretsNotShown(t *testing.T) {
	const token, pw = "tok-abcdefghijklmnopqrstuvwxyz", "Hunter2-correct-horse"
	home := t.TempDir()
	wf := write(t, "derived.yaml", `version: 1
name: derived
inputs:
  token: {type: string, secret: true}
steps:
  - id: pw
    ask: {prompt: "Password?", type: string, secret: true}
  - id: up
    uses: transform
    with: {value: "${{ upper(inputs.token) }}"}
  - id: b64
    uses: transform
    with: {value: "${{ toBase64(steps.pw.answer) }}"}
  - id: cut
    uses: transform
    with: {value: "${{ inputs.token[0:10] }}"}
outputs:
  up: ${{ steps.up.output }}
  b64: ${{ steps.b64.output }}
  cut: ${{ steps.cut.output }}
  short: ${{ inputs.token[0:2] }}
`)
	answers := write(t, "answers.yaml", "pw: "+pw+"\n")
	code, out, errOut := runOut(t, home, "run", wf, "-i", "token="+token, "--answers", answers, "--json")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	r := decodeRun(t, out)
	for _, name := range []string{"up", "b64", "cut", "short"} {
		if r.Outputs[name] != "***" {
			t.Errorf("output %s shown as %v", name, r.Outputs[name])
		}
	}
	seen := out + errOut
	for _, args := range [][]string{{"show", r.RunID}, {"show", r.RunID, "--json"}} {
		code, out, errOut := runOut(t, home, args...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d\n%s\n%s", args, code, out, errOut)
		}
		seen += out + errOut
	}
	if !strings.Contains(seen, `"output": "***"`) {
		t.Errorf("show --json shows no masked output:\n%s", seen)
	}
	files, _ := filepath.Glob(filepath.Join(home, "*.db*"))
	if len(files) == 0 {
		t.Fatal("no database file")
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		seen += string(b)
	}
	for _, s := range []string{token, pw, strings.ToUpper(token), base64.StdEncoding.EncodeToString([]byte(pw)), token[0:10]} {
		if bytes.Contains([]byte(seen), []byte(s)) {
			t.Errorf("%q found in clear", s)
		}
	}
}
