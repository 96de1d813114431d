package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"stepwise.dev/stepwise/internal/workflow"
)

// durationFlag is a flag holding a duration written as the workflow
// language writes one (workflow.ParseDuration: 30s, 1h30m, 7d): every
// duration flag of the CLI reads days the same way.
type durationFlag time.Duration

func (d *durationFlag) String() string {
	if *d == 0 {
		return ""
	}
	return time.Duration(*d).String()
}

func (d *durationFlag) Set(s string) error {
	v, err := workflow.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = durationFlag(v)
	return nil
}

func (d *durationFlag) Type() string { return "duration" }

// flagError turns a flag parsing error into a usage error; an unknown
// long flag gets the nearest flag of the command (its own or inherited)
// as a suggestion.
func flagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	var unknown *pflag.NotExistError
	if errors.As(err, &unknown) && unknown.GetSpecifiedShortnames() == "" {
		if s := nearestFlag(cmd, unknown.GetSpecifiedName()); s != "" {
			msg += fmt.Sprintf(" (did you mean --%s?)", s)
		}
	}
	return &exitError{code: ExitUsage, msg: msg}
}

// nearestFlag is the flag of cmd whose name is closest to name, when it is
// close enough to be a typo (at most a third of its letters edited);
// "" otherwise.
func nearestFlag(cmd *cobra.Command, name string) string {
	best, bestDist := "", -1
	visit := func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		d := workflow.EditDistance(strings.ToLower(name), f.Name)
		if bestDist < 0 || d < bestDist || (d == bestDist && f.Name < best) {
			best, bestDist = f.Name, d
		}
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	if best == "" || bestDist > max(1, len(best)/3) {
		return ""
	}
	return best
}
