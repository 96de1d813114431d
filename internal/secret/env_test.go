package secret

import (
	"errors"
	"strings"
	"testing"
)

func TestIsEnvRef(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"$A", "$_", "$API_TOKEN", "$a1", "$_9"} {
		if !IsEnvRef(s) {
			t.Errorf("IsEnvRef(%q) = false", s)
		}
	}
	for _, s := range []string{"", "$", "A", "$1A", "${A}", "$A-B", " $A", "$A ", "$A\n", "$$A", "$Ä", "sealed:v1:x"} {
		if IsEnvRef(s) {
			t.Errorf("IsEnvRef(%q) = true", s)
		}
	}
}

func TestResolveEnvRef(t *testing.T) {
	t.Parallel()
	env := map[string]string{"TOKEN": "s3cr3t-value", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }

	if v, err := ResolveEnvRef("$TOKEN", lookup); err != nil || v != "s3cr3t-value" {
		t.Fatalf("ResolveEnvRef($TOKEN) = %q, %v", v, err)
	}
	if v, err := ResolveEnvRef("$EMPTY", lookup); err != nil || v != "" {
		t.Fatalf("ResolveEnvRef($EMPTY) = %q, %v", v, err)
	}
	_, err := ResolveEnvRef("$MISSING", lookup)
	if !errors.Is(err, ErrUnset) || !strings.Contains(err.Error(), "MISSING") {
		t.Fatalf("unset: err = %v, want ErrUnset naming MISSING", err)
	}
	_, err = ResolveEnvRef("s3cr3t-value", lookup)
	if err == nil || strings.Contains(err.Error(), "s3cr3t-value") {
		t.Fatalf("not a reference: err = %v, want an error that does not echo the input", err)
	}
}
