package service

import (
	"context"
	"encoding/json"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.yaml.in/yaml/v4"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/store"
)

// fake stands in for an action that reaches outside (HTTP APIs, commands,
// files) so that every example can run in a test. Its output has the shape
// the real action documents, with plausible values.
type fake struct {
	name string
	out  func(in map[string]any) any
}

func (f fake) Name() string        { return f.name }
func (f fake) Description() string { return "test double" }
func (f fake) Safety() string      { return action.Mutating }
func (f fake) Run(_ context.Context, c action.Call) (any, error) {
	return f.out(c.Input), nil
}

var updateGolden = flag.Bool("update", false, "rewrite testdata/examples/*.outputs.json")

func fakes() []action.Action {
	return []action.Action{
		fake{"http", func(in map[string]any) any {
			url, _ := in["url"].(string)
			var body map[string]any
			switch {
			case strings.Contains(url, "/bookings"):
				body = map[string]any{"booking_id": "bk-" + strings.Split(url, "/")[4], "price": 420}
			case strings.Contains(url, "/charges"):
				body = map[string]any{"id": "ch_1", "status": "captured"}
			case strings.Contains(url, "status.json"):
				body = map[string]any{"status": map[string]any{"indicator": "none"}}
			case strings.Contains(url, "/deployments"):
				body = map[string]any{"id": "dep-1", "state": "succeeded", "message": "rolled out"}
			case strings.Contains(url, "/servers"):
				body = map[string]any{"server": map[string]any{"id": 1234, "status": "running",
					"public_net": map[string]any{"ipv4": map[string]any{"ip": "203.0.113.7"}}}}
			case strings.Contains(url, "rates") || strings.Contains(url, "exchange"):
				body = map[string]any{"base": "EUR", "rates": map[string]any{"USD": 1.08, "GBP": 0.86}}
			default:
				body = map[string]any{"ok": true, "id": "res-1"}
			}
			return map[string]any{"status": 200, "headers": map[string]any{"content-type": "application/json"}, "body": body}
		}},
		fake{"shell", func(in map[string]any) any {
			return map[string]any{"exit_code": 0, "stdout": "ok\n", "stderr": ""}
		}},
		fake{"file", func(in map[string]any) any {
			switch in["op"] {
			case "read":
				return map[string]any{"content": "{}"}
			case "list":
				return map[string]any{"entries": []any{}}
			}
			return map[string]any{"path": in["path"]}
		}},
	}
}

// TestEveryExampleRuns runs every example workflow to its end, answering
// its questions and agent steps from examples/answers/NAME.yaml.
func TestEveryExampleRuns(t *testing.T) {
	files, _ := filepath.Glob("../../examples/*.yaml")
	jsonFiles, _ := filepath.Glob("../../examples/*.json")
	files = append(files, jsonFiles...)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))
		t.Run(name, func(t *testing.T) { runExample(t, f, nil) })
	}
}

// runExample runs an example to its end with test doubles for the actions
// that reach outside, except those named in real, and compares its
// outputs with testdata/examples/NAME.outputs.json. env adds environment
// variables. It returns the run's id.
func runExample(t *testing.T, f string, env map[string]string, real ...string) string {
	t.Helper()
	name := strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))
	ctx := context.Background()
	// Sleeps and polling intervals of minutes pass in a blink: the
	// clock moves ten minutes every time the engine reads it.
	var skew atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(skew.Add(int64(10 * time.Minute)))) }
	vars := map[string]string{"HCLOUD_TOKEN": "tok-123456", "DIRECTORY_TOKEN": "dir-123456"}
	maps.Copy(vars, env)
	svc, err := Open(ctx, Options{Home: t.TempDir(), Durability: "normal", Now: clock, ShellPolicy: action.ShellPolicy{Enabled: true}, LookupEnv: func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(ctx)
	for _, a := range fakes() {
		if !slices.Contains(real, a.Name()) {
			svc.Actions.Register(a)
		}
	}
	answers := map[string]any{}
	inputs := map[string]any{}
	if data, err := os.ReadFile(filepath.Join("../../examples/answers", name+".yaml")); err == nil {
		var doc map[string]any
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(doc)
		_ = json.Unmarshal(b, &answers)
		if in, ok := answers["_inputs"].(map[string]any); ok {
			inputs = in
			delete(answers, "_inputs")
		}
	}
	f = withoutWaitTimeouts(t, f)
	l, err := svc.LoadWorkflow(f)
	if err != nil {
		t.Fatal(err)
	}
	plan := planExample(t, svc, f, inputs)
	id, err := svc.StartRun(ctx, l, inputs, false)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		st, err := svc.Wait(ctx, id, 20*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		v, err := svc.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if st != store.StatusWaiting {
			if st != store.StatusSucceeded {
				t.Fatalf("run %s: %s", st, v.Error)
			}
			checkPlanAgainstRun(t, svc, plan, id)
			got, _ := json.MarshalIndent(v.Outputs, "", "  ")
			got = []byte(strings.ReplaceAll(string(got), id, "<run-id>"))
			golden := filepath.Join("testdata", "examples", name+".outputs.json")
			if *updateGolden {
				_ = os.MkdirAll(filepath.Dir(golden), 0o755)
				if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
				return id
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test ./service -run EveryExample -update)", err)
			}
			if strings.TrimSpace(string(want)) != string(got) {
				t.Fatalf("outputs differ from %s:\n%s\nwant:\n%s", golden, got, want)
			}
			return id
		}
		p := v.Pause
		answer, ok := answers[p.StepID]
		if !ok {
			t.Fatalf("no answer for step %s (%s%s) in examples/answers/%s.yaml", p.StepID, p.Prompt, p.Instructions, name)
		}
		if _, err := svc.Continue(ctx, p.Token, answer); err != nil {
			t.Fatalf("answer for %s: %v", p.StepID, err)
		}
	}
	t.Fatal("too many pauses")
	return ""
}

// withoutWaitTimeouts copies the examples beside f into a temporary
// directory, where the steps that wait (questions, agent steps,
// sub-workflows, groups) have no timeout, and returns f's copy: the warped
// clock would make each of them pass at once (a 30m timeout is three
// reads of it). The engine's own tests cover those timeouts.
func withoutWaitTimeouts(t *testing.T, f string) string {
	t.Helper()
	dir := t.TempDir()
	files, err := filepath.Glob(filepath.Join(filepath.Dir(f), "*.*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range files {
		if st, err := os.Stat(src); err != nil || !st.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if filepath.Ext(src) == ".yaml" && yaml.Unmarshal(data, &doc) == nil && dropWaitTimeouts(doc["steps"]) {
			if data, err = yaml.Marshal(doc); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(src)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, filepath.Base(f))
}

// dropWaitTimeouts deletes the timeout of every step in a list (nested
// ones too) that is not a uses step; it reports whether it deleted any.
func dropWaitTimeouts(list any) bool {
	steps, _ := list.([]any)
	dropped := false
	for _, x := range steps {
		s, ok := x.(map[string]any)
		if !ok {
			continue
		}
		if _, uses := s["uses"]; !uses {
			if _, ok := s["timeout"]; ok {
				delete(s, "timeout")
				dropped = true
			}
		}
		dropped = dropWaitTimeouts(s["parallel"]) || dropped
		dropped = dropWaitTimeouts(s["steps"]) || dropped
	}
	return dropped
}
