package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"stepwise.dev/stepwise/internal/generate"
	"stepwise.dev/stepwise/internal/service"
)

func newGenerateCmd(g *globals) *cobra.Command {
	var (
		schemaFile, actionName, output string
		o                              generate.Options
	)
	cmd := &cobra.Command{
		Use:   "generate (--from-schema FILE | --action NAME) [--name N] [-o FILE]",
		Short: "Write a question flow from a JSON Schema object or an action's input schema",
		Long: "generate writes a workflow that asks one question per property of a JSON Schema object — type,\n" +
			"choices (enum), pattern, bounds, default and secrecy (writeOnly, format: password) carried over —\n" +
			"and returns the answers as one object; with --action, it then calls the action with them.\n" +
			"The workflow is validated; exit 1 if it is not valid (violations listed).",
		Args: exactArgs(0, "generate takes no arguments (use --from-schema FILE or --action NAME)"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var schema []byte
			if schemaFile != "" {
				var err error
				if schema, err = readSource(cmd, schemaFile); err != nil {
					return err
				}
			}
			if (schemaFile == "") == (actionName == "") {
				return usageErr("give --from-schema FILE or --action NAME")
			}
			return g.with(func(ctx context.Context, svc *service.Service) error {
				gen, err := svc.GenerateWorkflow(schema, actionName, o)
				if err != nil {
					return describe(err)
				}
				if output != "" {
					if err := os.WriteFile(output, []byte(gen.Content), 0o644); err != nil {
						return usageErr("--output: %v", err)
					}
				} else {
					fmt.Fprint(cmd.OutOrStdout(), gen.Content)
				}
				if !gen.Valid {
					for _, v := range gen.Violations {
						fmt.Fprintf(cmd.ErrOrStderr(), "%d:%d: %s: %s\n", v.Line, v.Column, v.Rule, v.Message)
					}
					return &exitError{code: ExitInvalid}
				}
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&schemaFile, "from-schema", "", "a JSON Schema object (JSON or YAML file; - for standard input)")
	f.StringVar(&actionName, "action", "", "an action whose input schema to ask for, then call it")
	f.StringVar(&o.Name, "name", "", "the workflow's name (default generated)")
	f.StringVar(&o.Title, "title", "", "the workflow's title (default: the schema's)")
	f.StringVarP(&output, "output", "o", "", "write the workflow to this file instead of standard output")
	return cmd
}
