package cli

import (
	"github.com/spf13/cobra"

	"stepwise.dev/stepwise/internal/workflow"
)

func newSchemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of the workflow language",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := cmd.OutOrStdout().Write(workflow.Schema())
			return err
		},
	}
}
