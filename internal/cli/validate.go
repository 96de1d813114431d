package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"stepwise.dev/stepwise/internal/workflow"
)

// fileReport is one file's entry in `validate --json`.
type fileReport struct {
	File       string               `json:"file"`
	Valid      bool                 `json:"valid"`
	Version    string               `json:"version,omitempty"`
	Violations []workflow.Violation `json:"violations"`
	// Warnings do not make the file invalid.
	Warnings []workflow.Violation `json:"warnings"`
}

// maxWorkflowSize bounds what validate reads; a workflow is a text file.
const maxWorkflowSize = 16 << 20

func newValidateCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate [--json] FILE...",
		Short: "Check workflow files and report every violation",
		Long: "Check workflow files (YAML or JSON) against the language and report every violation,\n" +
			"one line each: FILE:LINE:COL: RULE: MESSAGE (hint: …), and every warning (which does not\n" +
			"make a file invalid) as FILE:LINE:COL: warning: RULE: MESSAGE (hint: …).\n" +
			"Exit status: 0 all valid, 1 some invalid, 2 usage or I/O error.",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErr("validate: give at least one workflow file")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			reports := make([]fileReport, 0, len(args))
			code := ExitOK
			for _, f := range args {
				data, err := readWorkflowFile(f)
				if err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "stepwise: %v\n", err)
					code = ExitUsage
					continue
				}
				res := workflow.Check(data, workflow.Options{})
				vs := res.Violations
				if vs == nil {
					vs = []workflow.Violation{}
				}
				if res.Source == nil {
					// Not YAML or JSON at all: an input error, not an
					// invalid workflow.
					v := vs[0]
					fmt.Fprintf(cmd.ErrOrStderr(), "stepwise: %s:%d:%d: %s\n", f, v.Line, v.Column, v.Message)
					code = ExitUsage
					if !asJSON {
						continue
					}
				}
				if !res.Valid() && code == ExitOK {
					code = ExitInvalid
				}
				ws := res.Warnings
				if ws == nil {
					ws = []workflow.Violation{}
				}
				reports = append(reports, fileReport{File: f, Valid: res.Valid(), Version: res.Version, Violations: vs, Warnings: ws})
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := writeJSON(out, map[string]any{"files": reports}); err != nil {
					return err
				}
			} else if len(reports) > 0 {
				printReports(out, reports)
			}
			if code != ExitOK {
				return &exitError{code: code}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON report instead of lines")
	return cmd
}

func readWorkflowFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("%s: no such file", name)
		case errors.Is(err, fs.ErrPermission):
			return nil, fmt.Errorf("%s: permission denied", name)
		}
		return nil, fmt.Errorf("%s: %v", name, errors.Unwrap(err))
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, fmt.Errorf("%s: is a directory, not a workflow file", name)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxWorkflowSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if len(data) > maxWorkflowSize {
		return nil, fmt.Errorf("%s: larger than %d MiB; a workflow is a small text file", name, maxWorkflowSize>>20)
	}
	return data, nil
}

func printReports(w io.Writer, reports []fileReport) {
	invalid, violations := 0, 0
	for _, r := range reports {
		for _, v := range r.Violations {
			line := fmt.Sprintf("%s:%d:%d: %s: %s", r.File, v.Line, v.Column, v.Rule, v.Message)
			if v.Hint != "" {
				line += " (hint: " + v.Hint + ")"
			}
			fmt.Fprintln(w, line)
		}
		for _, v := range r.Warnings {
			line := fmt.Sprintf("%s:%d:%d: warning: %s: %s", r.File, v.Line, v.Column, v.Rule, v.Message)
			if v.Hint != "" {
				line += " (hint: " + v.Hint + ")"
			}
			fmt.Fprintln(w, line)
		}
		if !r.Valid {
			invalid++
			violations += len(r.Violations)
		}
	}
	switch {
	case invalid == 0 && len(reports) == 1:
		fmt.Fprintf(w, "%s: valid (version %s)\n", reports[0].File, reports[0].Version)
	case invalid == 0:
		fmt.Fprintf(w, "%d files valid\n", len(reports))
	default:
		fmt.Fprintf(w, "%d of %d files invalid, %d %s\n", invalid, len(reports), violations, plural(violations, "violation", "violations"))
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
