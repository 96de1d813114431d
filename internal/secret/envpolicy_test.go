package secret

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestParseEnvAllow(t *testing.T) {
	t.Parallel()
	got, err := ParseEnvAllow([]string{"HCLOUD_TOKEN", " APP_*, CHAT_WEBHOOK_URL ,", "*"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"HCLOUD_TOKEN", "APP_*", "CHAT_WEBHOOK_URL", "*"}; !slices.Equal(got, want) {
		t.Errorf("ParseEnvAllow = %q, want %q", got, want)
	}
	for _, bad := range []string{"1ABC", "A-B", "A*B", "$HOME", "**", "A B"} {
		if _, err := ParseEnvAllow([]string{bad}); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseEnvAllow(%q) = %v, want an error naming it", bad, err)
		}
	}
}

func TestEnvPolicyAllows(t *testing.T) {
	t.Parallel()
	p := EnvPolicy{Restricted: true, Allow: []string{"HCLOUD_TOKEN", "APP_*"}}
	for name, want := range map[string]bool{"HCLOUD_TOKEN": true, "HCLOUD_TOKEN2": false, "APP_": true, "APP_KEY": true, "APPX": false, "HOME": false} {
		if got := p.Allows(name); got != want {
			t.Errorf("Allows(%q) = %v, want %v", name, got, want)
		}
	}
	if !(EnvPolicy{}).Allows("ANYTHING") {
		t.Error("the zero policy restricts nothing")
	}
	if !(EnvPolicy{Restricted: true, Allow: []string{"*"}}).Allows("ANYTHING") {
		t.Error(`"*" allows every name`)
	}
	if (EnvPolicy{Restricted: true}).Allows("HOME") {
		t.Error("a restricted policy without names allows none")
	}
	if got := p.Refused([]string{"HOME", "APP_X", "HOME", "PATH"}); !slices.Equal(got, []string{"HOME", "PATH"}) {
		t.Errorf("Refused = %q, want HOME, PATH once each", got)
	}
}

// A restricted lookup never reveals a variable the policy does not allow,
// and reads the others as the wrapped lookup does.
func TestEnvPolicyLookupProperty(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		name := rapid.StringMatching(`[A-Z_][A-Z0-9_]{0,6}`)
		env := rapid.MapOf(name, rapid.String()).Draw(t, "env")
		allow := rapid.SliceOf(rapid.OneOf(name, rapid.Map(name, func(s string) string { return s + "*" }))).Draw(t, "allow")
		p := EnvPolicy{Restricted: rapid.Bool().Draw(t, "restricted"), Allow: allow}
		inner := func(n string) (string, bool) { v, ok := env[n]; return v, ok }
		lookup := p.Lookup(inner)
		for _, n := range append(slices.Collect(maps.Keys(env)), name.Draw(t, "other")) {
			v, ok := lookup(n)
			wantV, wantOK := inner(n)
			if !p.Allows(n) {
				wantV, wantOK = "", false
			}
			if v != wantV || ok != wantOK {
				t.Fatalf("lookup(%q) = %q, %v; want %q, %v (policy %+v)", n, v, ok, wantV, wantOK, p)
			}
		}
	})
}

func TestAllowHint(t *testing.T) {
	t.Parallel()
	if got := AllowHint([]string{"A", "B"}); !strings.Contains(got, "starting the server with --allow-env A --allow-env B") {
		t.Errorf("AllowHint = %q", got)
	}
}
