package cli

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGraphFile(t *testing.T) {
	f := write(t, "hello.yaml", validYAML)
	home := filepath.Join(t.TempDir(), "home")
	code, out, errOut := run(t, "--home", home, "graph", f)
	if code != ExitOK {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if !strings.HasPrefix(out, "flowchart TD\n") || !strings.Contains(out, `s_greet["greet<br>uses log"]`) ||
		!strings.Contains(out, "wf_start --> s_greet\n") || !strings.Contains(out, "s_greet --> wf_end\n") {
		t.Errorf("unexpected chart:\n%s", out)
	}
	if errOut != "" {
		t.Errorf("stderr %q", errOut)
	}
	// Drawing reads only the file: no home, database or key appears.
	if _, err := os.Stat(home); !os.IsNotExist(err) {
		t.Errorf("graph created the home directory (%v)", err)
	}
}

func TestGraphLibraryName(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "workflows"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "workflows", "hello.yaml"), []byte(validYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "--home", home, "graph", "hello")
	if code != ExitOK || !strings.Contains(out, "s_greet") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = run(t, "--home", home, "graph", "missing")
	if code != ExitUsage || !strings.Contains(errOut, `no "missing" in the library`) {
		t.Errorf("missing name: exit %d, stderr %q", code, errOut)
	}
}

func TestGraphOutputFile(t *testing.T) {
	f := write(t, "hello.yaml", validYAML)
	dest := filepath.Join(t.TempDir(), "hello.mmd")
	code, out, errOut := run(t, "graph", "--output", dest, f)
	if code != ExitOK || out != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	_, want, _ := run(t, "graph", f)
	got, err := os.ReadFile(dest)
	if err != nil || string(got) != want {
		t.Errorf("--output wrote %q (%v), stdout gives %q", got, err, want)
	}
}

func TestGraphInvalid(t *testing.T) {
	f := write(t, "bad.yaml", strings.Replace(validYAML, "inputs.who", "inputs.whom", 1))
	code, out, errOut := run(t, "graph", f)
	if code != ExitInvalid {
		t.Fatalf("exit %d, want %d", code, ExitInvalid)
	}
	if out != "" {
		t.Errorf("an invalid workflow printed a chart: %q", out)
	}
	want := f + `:8:32: reference: input "whom" is not declared (hint: did you mean "who"?)` + "\n1 of 1 files invalid, 1 violation\n"
	if errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
}

func TestGraphErrors(t *testing.T) {
	notYAML := write(t, "broken.yaml", "steps: [\n")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no argument", []string{"graph"}, "graph: give one workflow file or name"},
		{"two arguments", []string{"graph", "a", "b"}, "graph: give one workflow file or name"},
		{"missing file", []string{"graph", "/nonexistent/x.yaml"}, "no such file /nonexistent/x.yaml"},
		{"unsafe name", []string{"graph", "Bad Name"}, "unsafe workflow name"},
		{"not yaml", []string{"graph", notYAML}, notYAML + ":"},
		{"bad output", []string{"graph", "-o", "/nonexistent/dir/x.mmd", write(t, "ok.yaml", validYAML)}, "--output /nonexistent/dir/x.mmd:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(t, c.args...)
			if code != ExitUsage {
				t.Fatalf("exit %d, want %d (stderr %q)", code, ExitUsage, errOut)
			}
			if out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "goroutine") {
				t.Errorf("want one line containing %q on stderr, got stdout %q, stderr %q", c.want, out, errOut)
			}
		})
	}
}

// graph --svg draws the workflow; with --run, coloured by the run's step
// statuses (the run's own version when no workflow is named).
func TestGraphSVG(t *testing.T) {
	home := t.TempDir()
	f := write(t, "hello.yaml", validYAML)
	code, out, errOut := run(t, "--home", home, "graph", "--svg", f)
	if code != ExitOK || !strings.HasPrefix(out, "<?xml") || !strings.Contains(out, `data-step="greet" data-status="none"`) {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	if err := xml.Unmarshal([]byte(out), new(struct{})); err != nil {
		t.Fatalf("not XML: %v", err)
	}
	dest := filepath.Join(t.TempDir(), "hello.svg")
	if code, _, errOut := run(t, "--home", home, "graph", "--svg", "-o", dest, f); code != ExitOK {
		t.Fatalf("-o: exit %d %q", code, errOut)
	}
	if got, err := os.ReadFile(dest); err != nil || string(got) != out {
		t.Errorf("-o wrote %d bytes (%v), stdout gives %d", len(got), err, len(out))
	}

	code, runOut, _ := run(t, "--home", home, "run", f, "--json")
	id := decodeRun(t, runOut).RunID
	if code != ExitOK {
		t.Fatalf("run: exit %d", code)
	}
	for _, args := range [][]string{{"graph", "--svg", "--run", id}, {"graph", "--svg", "--run", id, f}} {
		code, out, errOut = run(t, append([]string{"--home", home}, args...)...)
		if code != ExitOK || !strings.Contains(out, `data-step="greet" data-status="succeeded"`) {
			t.Fatalf("%v: exit %d, stderr %q\n%s", args, code, errOut, out)
		}
	}
	if code, _, errOut := run(t, "--home", home, "graph", "--run", id, f); code != ExitUsage || !strings.Contains(errOut, "--svg") {
		t.Errorf("--run without --svg: exit %d %q", code, errOut)
	}
	if code, _, errOut := run(t, "--home", home, "graph", "--svg", "--run", "nope"); code != ExitUsage || !strings.Contains(errOut, "no run nope") {
		t.Errorf("unknown run: exit %d %q", code, errOut)
	}
}
