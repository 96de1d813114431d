package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"stepwise.dev/stepwise/engine"
	"stepwise.dev/stepwise/graph"
	"stepwise.dev/stepwise/home"
	"stepwise.dev/stepwise/service"
	"stepwise.dev/stepwise/workflow"
)

func newGraphCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "graph NAME|FILE",
		Short: "Print a workflow as a Mermaid flowchart",
		Long: "Print a Mermaid flowchart (flowchart TD) of a workflow file, or of a workflow of the library\n" +
			"by name: its steps, if conditions, switch cases and loops, parallel groups and foreach\n" +
			"loops, and the failure path (compensations, on_failure). Paste it into any Mermaid viewer.\n\n" +
			"Exit status: 0 printed, 1 invalid workflow (violations on standard error), 2 usage or I/O error.",
		Args: exactArgs(1, "graph: give one workflow file or name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return printGraph(cmd, g, args[0], output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "write the flowchart to FILE instead of standard output")
	return cmd
}

func printGraph(cmd *cobra.Command, g *globals, ref, output string) error {
	data, file, err := graphSource(cmd.Context(), g, ref)
	if err != nil {
		return err
	}
	// Like validate: the library's actions and workflows are not looked
	// up, since a chart only needs the workflow's own structure.
	res := workflow.Check(data, workflow.Options{})
	if res.Source == nil {
		v := res.Violations[0]
		return usageErr("%s:%d:%d: %s", file, v.Line, v.Column, v.Message)
	}
	if !res.Valid() {
		printReports(cmd.ErrOrStderr(), []fileReport{{File: file, Violations: res.Violations}})
		return &exitError{code: ExitInvalid}
	}
	chart := graph.Mermaid(res.Workflow)
	if output == "" {
		_, err := fmt.Fprint(cmd.OutOrStdout(), chart)
		return err
	}
	if err := os.WriteFile(output, []byte(chart), 0o644); err != nil {
		return usageErr("--output %s: %v", output, errors.Unwrap(err))
	}
	return nil
}

// graphSource reads the workflow to draw: a file, or a library workflow
// by name — from the home's files, or, when a PostgreSQL database is named
// (--database, $STEPWISE_DATABASE_URL), from the library it holds (a saved
// workflow, else a draft). It returns the content and where it came from.
func graphSource(ctx context.Context, g *globals, ref string) ([]byte, string, error) {
	if g.database == "" || home.IsPathRef(ref) {
		file, err := findWorkflow(g, ref)
		if err != nil {
			return nil, "", err
		}
		data, err := readWorkflowFile(file)
		if err != nil {
			return nil, "", usageErr("%v", err)
		}
		return data, file, nil
	}
	if !home.ValidName(ref) {
		return nil, "", usageErr("%q is neither a file (no path separator or .yaml/.yml/.json) nor a library name", ref)
	}
	svc, err := g.open(ctx, io.Discard)
	if err != nil {
		return nil, "", describe(err)
	}
	defer svc.Close(context.Background())
	data, where, err := svc.RunnableSource(ref)
	if engine.CodeOf(err) == service.CodeNotFound {
		return nil, "", usageErr("no workflow or draft named %q in the library of the database", ref)
	}
	if err != nil {
		return nil, "", describe(err)
	}
	return data, where, nil
}

// findWorkflow resolves a file path or library name the way run does, but
// without opening the home: drawing a chart needs neither the database
// nor the key, and should not create them.
func findWorkflow(g *globals, ref string) (string, error) {
	dir, err := home.Resolve(g.home)
	if err != nil {
		return "", usageErr("%v", err)
	}
	file, err := (&home.Home{Dir: dir}).FindWorkflow(ref)
	if err != nil {
		return "", usageErr("%v", err)
	}
	return file, nil
}
