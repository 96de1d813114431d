package service

import (
	"os"
	"path/filepath"
	"testing"

	"stepwise.dev/stepwise/internal/mcpclient/mcpclienttest"
)

// TestMain lets the test binary be the stdio MCP server that mcp steps
// start (mcpclienttest.Helper), and removes the stepwise binary the tests
// built, if any.
func TestMain(m *testing.M) {
	mcpclienttest.Main()
	code := m.Run()
	if stepwiseBin != "" {
		_ = os.RemoveAll(filepath.Dir(stepwiseBin))
	}
	os.Exit(code)
}
