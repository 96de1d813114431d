package service

import (
	"os"
	"testing"

	"stepwise.dev/stepwise/mcpclient/mcpclienttest"
)

// TestMain lets the test binary be the stdio MCP server that mcp steps
// start (mcpclienttest.Helper).
func TestMain(m *testing.M) {
	mcpclienttest.Main()
	os.Exit(m.Run())
}
