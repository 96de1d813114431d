package workflow

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseDuration parses a duration of the language: Go's syntax (300ms,
// 1.5h, 2h45m) plus d for days (2d, 1d12h). Negative durations are errors.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty duration")
	}
	var days float64
	if i := strings.IndexByte(s, 'd'); i >= 0 {
		n, err := strconv.ParseFloat(s[:i], 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		days = n
		s = s[i+1:]
		if s == "" {
			return time.Duration(days * float64(24*time.Hour)), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: use a number and a unit (ms, s, m, h, d), e.g. 30s or 1h30m", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return d + time.Duration(days*float64(24*time.Hour)), nil
}
