//go:build unix

package main

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A workflow an agent sends that reads a variable of the server's
// environment.
const readsEnv = `version: 1
name: peek
env: [STEPWISE_E2E_SECRET]
steps:
  - {id: a, uses: noop}
outputs:
  got: ${{ env.STEPWISE_E2E_SECRET }}
`

// serveWithEnv starts `stepwise serve` on a fresh home with extra
// environment variables.
func serveWithEnv(t *testing.T, env []string, args ...string) *mcp.ClientSession {
	t.Helper()
	return serveStdioEnv(t, env, append([]string{"--home", t.TempDir(), "serve"}, args...)...)
}

// `stepwise serve` lets workflows read only the variables the operator
// names (--allow-env or $STEPWISE_ALLOW_ENV); the refusal says how.
func TestServeEnvPolicy(t *testing.T) {
	secret := []string{"STEPWISE_E2E_SECRET=s3cret-value"}
	r, isErr := callTool(t, serveWithEnv(t, secret), "run_start", map[string]any{"definition": readsEnv}, nil)
	if !isErr || r.ErrorCode != "ENV_NOT_ALLOWED" || r.Category != "security" || len(r.Violations) != 1 {
		t.Fatalf("without --allow-env: %+v", r)
	}
	for what, cs := range map[string]*mcp.ClientSession{
		"--allow-env prefix*":   serveWithEnv(t, secret, "--allow-env", "STEPWISE_E2E_*"),
		"$STEPWISE_ALLOW_ENV":   serveWithEnv(t, append(secret, "STEPWISE_ALLOW_ENV=OTHER,STEPWISE_E2E_SECRET")),
		"--allow-env * (every)": serveWithEnv(t, secret, "--allow-env", "*"),
	} {
		r, isErr := callTool(t, cs, "run_start", map[string]any{"definition": readsEnv}, nil)
		if isErr || r.Status != "succeeded" || r.Outputs["got"] != "s3cret-value" {
			t.Errorf("%s: %+v", what, r)
		}
	}
}

func TestServeRefusesABadAllowEnv(t *testing.T) {
	cmd := exec.Command(sharedBinary(t), "--home", t.TempDir(), "serve", "--allow-env", "1BAD")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), `"1BAD" is not an environment variable name`) {
		t.Fatalf("exit %v, output %q", err, out)
	}
}
