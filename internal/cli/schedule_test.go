package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

const cliScheduled = `version: 1
name: nightly
steps:
  - id: a
    uses: log
    with: {message: hi}
triggers:
  - schedule: {cron: "0 3 * * *", timezone: Europe/Paris}
  - schedule: {every: 15m, catch_up: none}
`

// schedules lists the library's schedules; pause and resume hold and
// release one; an unknown key is refused.
func TestSchedulesCommand(t *testing.T) {
	home := t.TempDir()
	if code, _, errOut := runOut(t, home, "save", writeTemp(t, cliScheduled)); code != ExitOK {
		t.Fatalf("save: %d %s", code, errOut)
	}
	code, out, errOut := runOut(t, home, "schedules")
	if code != ExitOK || !strings.Contains(out, "nightly#0") || !strings.Contains(out, "cron 0 3 * * * (Europe/Paris)") || !strings.Contains(out, "every 15m") {
		t.Fatalf("schedules: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := runOut(t, home, "schedules", "pause", "nightly#1"); code != ExitOK || !strings.Contains(out, "paused") {
		t.Fatalf("pause: %d %s %s", code, out, errOut)
	}
	code, out, _ = runOut(t, home, "schedules", "--json")
	var list []struct {
		Key    string `json:"key"`
		Paused bool   `json:"paused"`
	}
	if err := json.Unmarshal([]byte(out), &list); code != ExitOK || err != nil || len(list) != 2 || list[0].Paused || !list[1].Paused {
		t.Fatalf("schedules --json after pause: %d %s %v", code, out, err)
	}
	if code, out, errOut := runOut(t, home, "schedules", "resume", "nightly#1"); code != ExitOK || !strings.Contains(out, "resumed") {
		t.Fatalf("resume: %d %s %s", code, out, errOut)
	}
	if code, _, errOut := runOut(t, home, "schedules", "pause", "nope#0"); code == ExitOK || !strings.Contains(errOut, "nightly#0") {
		t.Fatalf("pause of no schedule: %d %s", code, errOut)
	}
}
