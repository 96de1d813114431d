package service

import (
	"context"
	"strings"
	"testing"
)

// A misspelled `with` key of a known action is a violation with a hint;
// a missing required one too.
func TestWithKeysAreChecked(t *testing.T) {
	svc, err := Open(context.Background(), Options{Home: t.TempDir(), Durability: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(context.Background())
	v := svc.ValidateContent([]byte("version: 1\nname: w\nsteps:\n  - id: a\n    uses: log\n    with: {mesage: hi}\n  - id: b\n    uses: transform\n"))
	if v.Valid || len(v.Violations) != 3 {
		t.Fatalf("%+v", v)
	}
	text := ""
	for _, x := range v.Violations {
		text += x.Path + " " + x.Rule + " " + x.Message + " " + x.Hint + "\n"
	}
	for _, want := range []string{`/steps/0/with/mesage unknown-field action log takes no input "mesage" (it takes level, message) did you mean "message"?`,
		"/steps/0/with required action log needs with.message", "/steps/1/uses required action transform needs with.value"} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in\n%s", want, text)
		}
	}
}
