// Command stepwise is the stepwise binary: a workflow engine that AI agents
// and people drive over the Model Context Protocol. main only wires the
// command-line surface; see package cli.
package main

import (
	"os"

	"stepwise.dev/stepwise/internal/cli"
)

func main() {
	os.Exit(cli.Run())
}
