package service

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// derivedFile is the workflow that computes values from a secret input and
// a secret answer (the three leaks of issue 21) and declassifies one.
const derivedFile = "../../testdata/secrets/derived.yaml"

// derivedFlow is derivedFile's text.
func derivedFlow(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(derivedFile)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestDerivedSecretsInViews: run_get's view (and show's, the same) shows
// every value computed from a secret as ***, the two-byte one included,
// a declassified one in clear, and the database file holds none of them.
func TestDerivedSecretsInViews(t *testing.T) {
	ctx := context.Background()
	const token, pw = "tok-abcdefghijklmnopqrstuvwxyz", "Hunter2-correct-horse"
	s := serviceWith(t, "derived", []byte(derivedFlow(t)))
	id, v := startPaused(t, s, "derived", map[string]any{"token": token})
	if _, err := s.Continue(ctx, v.Pause.Token, pw); err != nil {
		t.Fatal(err)
	}
	if v, err := s.AwaitBrief(ctx, id, 10*time.Second, nil, nil); err != nil || v.Status != "succeeded" {
		t.Fatalf("run: %v %+v", err, v)
	}
	view, err := s.GetRun(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"up", "b64", "cut", "short"} {
		if view.Outputs[name] != "***" {
			t.Errorf("output %s shown as %v", name, view.Outputs[name])
		}
	}
	if view.Outputs["size"] != float64(len(token)) {
		t.Errorf("declassified output shown as %v", view.Outputs["size"])
	}
	for _, st := range view.Steps {
		want := any("***")
		switch st.ID {
		case "pw":
			if st.Answer != "***" {
				t.Errorf("answer shown as %v", st.Answer)
			}
			continue
		case "size":
			want = float64(len(token))
		}
		if st.Output != want {
			t.Errorf("step %s output shown as %v, want %v", st.ID, st.Output, want)
		}
	}
	evs, err := s.Events(ctx, id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	seen, _ := json.Marshal(view)
	for _, e := range evs {
		seen = append(seen, e.Data...)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(s.Home.Dir, "*.db*"))
	if len(files) == 0 {
		t.Fatalf("no database file in %s", s.Home.Dir)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, b...)
	}
	for _, secret := range []string{token, pw, strings.ToUpper(token), base64.StdEncoding.EncodeToString([]byte(pw)), token[0:10]} {
		if bytes.Contains(seen, []byte(secret)) {
			t.Errorf("%q found in clear", secret)
		}
	}
}
