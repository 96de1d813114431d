package mcpclient

import (
	"os"
	"testing"

	"stepwise.dev/stepwise/internal/mcpclient/mcpclienttest"
)

// TestMain lets the test binary be the stdio MCP server the tests start.
func TestMain(m *testing.M) {
	mcpclienttest.Main()
	os.Exit(m.Run())
}
