package web

import (
	"encoding/json"
	"fmt"
	"net/url"
	"time"
)

// maxShown bounds a value shown in a page (the rest is cut).
const maxShown = 64 << 10

// jsonText is v as indented JSON, cut at maxShown.
func jsonText(v any) string {
	if raw, ok := v.(json.RawMessage); ok {
		var x any
		if json.Unmarshal(raw, &x) != nil {
			return string(raw)
		}
		v = x
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > maxShown {
		return string(b[:maxShown]) + "\n… (cut)"
	}
	return string(b)
}

// timeText is t in UTC, to the second.
func timeText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// ago is how long before now t was, roughly.
func ago(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return durationText(time.Since(t)) + " ago"
}

// durationText is d rounded for people.
func durationText(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	case d < 48*time.Hour:
		return d.Round(time.Minute).String()
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// shortID is the start of a run id.
func shortID(id string) string {
	if len(id) > 13 {
		return id[:13]
	}
	return id
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }
