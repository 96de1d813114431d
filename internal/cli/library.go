package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"stepwise.dev/stepwise/internal/service"
)

func newSaveCmd(g *globals) *cobra.Command {
	var req service.SaveRequest
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "save FILE",
		Short: "Save a workflow file into the library (or as a draft with --draft)",
		Long: "save validates FILE and writes it into the library under its name: field. An invalid workflow is\n" +
			"refused (exit 1, violations listed) unless --draft. Replacing an existing workflow needs\n" +
			"--expected-version (the revision you started from: the hash of the file's bytes, which stepwise\n" +
			"get and save show) or --overwrite; the replaced file is kept in the home's previous/ directory\n" +
			"(in the database with --database). Saving to the library removes the draft of the same name.",
		Args: exactArgs(1, "save takes one FILE (- for standard input)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := readSource(cmd, args[0])
			if err != nil {
				return err
			}
			req.Content = string(data)
			return g.with(func(ctx context.Context, svc *service.Service) error {
				r, err := svc.SaveWorkflow(ctx, req)
				if err != nil {
					return describe(err)
				}
				out := cmd.OutOrStdout()
				if asJSON {
					return writeJSON(out, r)
				}
				what := "saved"
				if r.Draft {
					what = "saved draft"
				}
				fmt.Fprintf(out, "%s %s (%s) at %s\nrevision %s\n", what, r.Name, r.Version, r.Path, r.Revision)
				for _, v := range r.Violations {
					fmt.Fprintf(out, "  %d:%d: %s: %s\n", v.Line, v.Column, v.Rule, v.Message)
				}
				if r.DraftRemoved {
					fmt.Fprintf(out, "removed the draft %s\n", r.Name)
				}
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.BoolVar(&req.Draft, "draft", false, "save as a draft (kept even when invalid)")
	f.StringVar(&req.Name, "name", "", "for a draft that does not parse yet: the name to file it under")
	f.StringVar(&req.ExpectedVersion, "expected-version", "", "replace the existing workflow only if it is at this revision (the hash of its bytes: stepwise get)")
	f.BoolVar(&req.Overwrite, "overwrite", false, "replace the existing workflow whatever its revision")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

// readSource reads a file argument, "-" being standard input.
func readSource(cmd *cobra.Command, path string) ([]byte, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), 16<<20))
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, usageErr("%s: %v", path, strings.TrimPrefix(err.Error(), "open "+path+": "))
	}
	return data, nil
}

func newListCmd(g *globals) *cobra.Command {
	var o service.ListOptions
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [PATTERN]",
		Short: "List the library's workflows (--drafts: drafts too)",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageErr("list takes at most one PATTERN (a glob like deploy-* or a word)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Pattern = args[0]
			}
			return g.with(func(ctx context.Context, svc *service.Service) error {
				ws, err := svc.ListLibrary(ctx, o)
				if err != nil {
					return describe(err)
				}
				out := cmd.OutOrStdout()
				if asJSON {
					return writeJSON(out, map[string]any{"workflows": ws})
				}
				if len(ws) == 0 {
					fmt.Fprintln(out, "no workflows")
					return nil
				}
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tSTATE\tTITLE\tTAGS")
				for _, w := range ws {
					state := "valid"
					if !w.Valid {
						state = "invalid"
					}
					if w.Draft {
						state = "draft, " + state
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", w.Name, state, w.Title, strings.Join(w.Tags, ","))
				}
				return tw.Flush()
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Tag, "tag", "", "only workflows with this tag")
	f.BoolVar(&o.IncludeDrafts, "drafts", false, "list drafts too")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newGetCmd(g *globals) *cobra.Command {
	var draft, asJSON bool
	cmd := &cobra.Command{
		Use:   "get NAME",
		Short: "Show a library workflow: its file, version, inputs, violations and run statistics",
		Args:  exactArgs(1, "get takes one NAME (a library name, see stepwise list)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.with(func(ctx context.Context, svc *service.Service) error {
				d, err := svc.GetLibraryEntry(ctx, args[0], draft)
				if err != nil {
					return describe(err)
				}
				out := cmd.OutOrStdout()
				if asJSON {
					return writeJSON(out, d)
				}
				fmt.Fprintf(out, "# %s  %s\n# %s\n# revision %s\n", d.Name, d.Version, d.Path, d.Revision)
				st := d.Stats
				fmt.Fprintf(out, "# runs: %d (%d succeeded, %d failed, %d canceled, %d active)\n", st.Runs, st.Succeeded, st.Failed, st.Canceled, st.Active)
				for _, v := range d.Violations {
					fmt.Fprintf(out, "# invalid %d:%d: %s\n", v.Line, v.Column, v.Message)
				}
				fmt.Fprint(out, d.Content)
				if !strings.HasSuffix(d.Content, "\n") {
					fmt.Fprintln(out)
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&draft, "draft", false, "show the draft of that name")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (content, definition, references, statistics)")
	return cmd
}

func newRenameCmd(g *globals) *cobra.Command {
	var expected string
	cmd := &cobra.Command{
		Use:   "rename OLD NEW",
		Short: "Rename a library workflow (its file and its name: field)",
		Args:  exactArgs(2, "rename takes OLD and NEW names"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.with(func(ctx context.Context, svc *service.Service) error {
				r, err := svc.RenameWorkflow(ctx, args[0], args[1], expected)
				if err != nil {
					return describe(err)
				}
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "renamed %s to %s (%s)\nrevision %s\n", r.OldName, r.Name, r.Version, r.Revision)
				if len(r.ReferencedBy) > 0 {
					fmt.Fprintf(out, "invalid now, as they call %s: %s\n", r.OldName, strings.Join(r.ReferencedBy, ", "))
				}
				if len(r.DraftsReferencing) > 0 {
					fmt.Fprintf(out, "drafts calling %s: %s\n", r.OldName, strings.Join(r.DraftsReferencing, ", "))
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&expected, "expected-version", "", "rename only if the workflow is at this revision (stepwise get)")
	return cmd
}

func newDeleteCmd(g *globals) *cobra.Command {
	var draft, yes bool
	var expected string
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a library workflow or draft (a copy is kept in the home's previous/, or the database's)",
		Args:  exactArgs(1, "delete takes one NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			return g.with(func(ctx context.Context, svc *service.Service) error {
				if _, err := svc.GetLibraryEntry(ctx, name, draft); err != nil {
					return describe(err)
				}
				what := "workflow " + name
				if draft {
					what = "draft " + name
				}
				if err := confirmInTerminal(cmd, "Delete "+what+"?", yes); err != nil {
					return err
				}
				r, err := svc.DeleteWorkflow(ctx, name, draft, expected)
				if err != nil {
					return describe(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "deleted %s (%s); a copy is in %s\n", what, r.Version, r.KeptIn)
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.BoolVar(&draft, "draft", false, "delete the draft of that name")
	f.BoolVar(&yes, "yes", false, "do not ask for confirmation")
	f.StringVar(&expected, "expected-version", "", "delete only if it is at this revision (stepwise get)")
	return cmd
}

// confirmInTerminal asks a yes/no question on the terminal; without one,
// yes must have been given (--yes).
func confirmInTerminal(cmd *cobra.Command, question string, yes bool) error {
	if yes {
		return nil
	}
	if !isTerminal(os.Stdin) {
		return usageErr("%s Not asking without a terminal: pass --yes to confirm", question)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "%s [y/N] ", question)
	line, _ := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return &exitError{code: ExitInvalid, msg: "not confirmed: nothing was deleted"}
}
