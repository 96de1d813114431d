package cli

import (
	"context"
	"errors"
	"io"
	"os"

	"github.com/spf13/cobra"

	"stepwise.dev/stepwise/internal/graph"
	"stepwise.dev/stepwise/internal/home"
	"stepwise.dev/stepwise/internal/service"
	"stepwise.dev/stepwise/internal/workflow"
)

func newGraphCmd(g *globals) *cobra.Command {
	var o graphOptions
	cmd := &cobra.Command{
		Use:   "graph NAME|FILE",
		Short: "Print a workflow as a Mermaid flowchart, or draw it as SVG",
		Long: "Print a Mermaid flowchart (flowchart TD) of a workflow file, or of a workflow of the library\n" +
			"by name: its steps, if conditions, switch cases and loops, parallel groups and foreach\n" +
			"loops, and the failure path (compensations, on_failure). Paste it into any Mermaid viewer.\n\n" +
			"With --svg, draw it instead as a standalone SVG image (laid out by stepwise itself, no viewer\n" +
			"needed); with --run RUN as well, colour each step by its status in that run (the workflow\n" +
			"argument may then be left out: the run's own version is drawn).\n\n" +
			"Exit status: 0 printed, 1 invalid workflow (violations on standard error), 2 usage or I/O error.",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && o.run != "" {
				return nil
			}
			return exactArgs(1, "graph: give one workflow file or name")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ref := ""
			if len(args) == 1 {
				ref = args[0]
			}
			return printGraph(cmd, g, ref, o)
		},
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "write the flowchart to FILE instead of standard output")
	cmd.Flags().BoolVar(&o.svg, "svg", false, "draw an SVG image instead of a Mermaid flowchart")
	cmd.Flags().StringVar(&o.run, "run", "", "with --svg: colour the steps by their status in run RUN")
	return cmd
}

type graphOptions struct {
	output, run string
	svg         bool
}

func printGraph(cmd *cobra.Command, g *globals, ref string, o graphOptions) error {
	if o.run != "" && !o.svg {
		return usageErr("graph: --run colours an SVG drawing: add --svg")
	}
	var wf *workflow.Workflow
	if ref != "" {
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
		wf = res.Workflow
	}
	var chart []byte
	if o.svg {
		var statuses map[string]string
		if o.run != "" {
			var err error
			if wf, statuses, err = runStatuses(g, o.run, wf); err != nil {
				return err
			}
		}
		img, err := graph.SVG(wf, graph.SVGOptions{Status: statuses})
		if err != nil {
			return describe(err)
		}
		chart = img
	} else {
		chart = []byte(graph.Mermaid(wf))
	}
	if o.output == "" {
		_, err := cmd.OutOrStdout().Write(chart)
		return err
	}
	if err := os.WriteFile(o.output, chart, 0o644); err != nil {
		return usageErr("--output %s: %v", o.output, errors.Unwrap(err))
	}
	return nil
}

// runStatuses reads a run's step statuses and, when wf is nil, the
// workflow version the run is pinned to.
func runStatuses(g *globals, runID string, wf *workflow.Workflow) (*workflow.Workflow, map[string]string, error) {
	var statuses map[string]string
	err := g.with(func(ctx context.Context, svc *service.Service) error {
		v, err := svc.GetRun(ctx, runID)
		if err != nil {
			return describe(err)
		}
		statuses = service.StepStatuses(v)
		if wf == nil {
			l, err := svc.Definition(ctx, runID)
			if err != nil {
				return describe(err)
			}
			wf = l.Workflow
		}
		return nil
	})
	return wf, statuses, err
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
	if service.CodeOf(err) == service.CodeNotFound {
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
