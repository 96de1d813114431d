package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Env is what the table's header says about the run: numbers from a
// loaded machine are not numbers from an idle one.
type Env struct {
	Sizes
	Date       time.Time
	Go         string
	CPUs       int
	LoadBefore string // /proc/loadavg's 1, 5 and 15 minute averages
	LoadAfter  string
}

func describe(sz Sizes) Env {
	return Env{Sizes: sz, Date: time.Now(), Go: runtime.Version(), CPUs: runtime.NumCPU(), LoadBefore: loadAverage()}
}

// loadAverage is the machine's load (other processes compete for the
// same cores: the table shows it so that noise can be judged).
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// printTable prints the figures, then how each was measured.
func printTable(w io.Writer, env Env, figs []Figure) {
	fmt.Fprintf(w, "stepwise bench -%s  %s  %s  %d CPUs  load average %s (before) %s (after)\n",
		env.Mode, env.Date.Format("2006-01-02 15:04 MST"), env.Go, env.CPUs, env.LoadBefore, env.LoadAfter)
	if env.Mode != "full" {
		fmt.Fprintf(w, "reduced sizes (-%s): %d waiting runs instead of 10,000, %d stored runs instead of 100,000 — same names\n",
			env.Mode, env.Waiting, env.Stored)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tvalue\tunit\tbaseline\tbaseline value\tratio\ttarget\tresult")
	for _, f := range figs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", f.Name, num(f.Value), f.Unit, f.Baseline,
			optional(f.BaselineValue), optional(f.Ratio), f.target.Text, f.Result())
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, f := range figs {
		fmt.Fprintf(w, "%s: %s\n", f.Name, f.detail)
	}
}

// num prints a figure with the digits that mean something.
func num(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

func optional(v *float64) string {
	if v == nil {
		return "—"
	}
	return num(*v)
}
