package cli

import (
	"strings"
	"testing"
)

// The conformance suite's fixtures are a test-only, hidden flag: not in
// serve's help, refused without STEPWISE_TEST_FIXTURES=1.
func TestServeConformanceFixturesFlag(t *testing.T) {
	t.Setenv(fixturesEnv, "")
	code, out, _ := run(t, "serve", "--help")
	if code != 0 || !strings.Contains(out, "--allow-env") {
		t.Fatalf("serve --help: exit %d\n%s", code, out)
	}
	if strings.Contains(out, "fixture") {
		t.Errorf("serve --help shows the fixtures flag:\n%s", out)
	}
	for _, env := range []string{"", "0", "true"} {
		t.Setenv(fixturesEnv, env)
		code, _, errOut := run(t, "--home", t.TempDir(), "serve", "--conformance-fixtures")
		if code != ExitUsage || !strings.Contains(errOut, fixturesEnv+"=1") {
			t.Errorf("%s=%q: exit %d, want %d naming %s=1\n%s", fixturesEnv, env, code, ExitUsage, fixturesEnv, errOut)
		}
	}
}
