package workflow

import (
	"strings"
	"testing"
	"time"
)

func triggerDoc(triggers string) string {
	return `version: 1
name: report
inputs:
  region: {type: string, enum: [eu, us]}
  verbose: {type: boolean, default: false}
steps:
  - id: a
    uses: log
    with: {message: hi}
triggers:
` + triggers
}

func TestTriggersValid(t *testing.T) {
	res := Check([]byte(triggerDoc(`  - schedule: {cron: "0 9 * * 1-5", timezone: Europe/Paris, inputs: {region: eu}}
  - schedule: {every: 15m, inputs: {region: us, verbose: true}, catch_up: all}
  - webhook: {name: intake, secret_env: HOOK_SECRET}
`)), Options{})
	if !res.Valid() {
		t.Fatalf("violations: %v", res.Violations)
	}
	if got := len(res.Workflow.Triggers); got != 3 {
		t.Fatalf("triggers = %d, want 3", got)
	}
	if hooks := res.Workflow.Webhooks(); len(hooks) != 1 || hooks[0].Name != "intake" || hooks[0].SecretEnv != "HOOK_SECRET" {
		t.Fatalf("webhooks = %+v", hooks)
	}
	if p := res.Workflow.Triggers[0].Schedule.Policy(); p != CatchUpLast {
		t.Fatalf("default policy = %q", p)
	}
}

func TestTriggersInvalid(t *testing.T) {
	cases := map[string]struct{ triggers, path, rule string }{
		"cron":        {`  - schedule: {cron: "61 * * * *", inputs: {region: eu}}`, "/triggers/0/schedule", RuleFormat},
		"timezone":    {`  - schedule: {cron: "0 9 * * *", timezone: Mars/Olympus, inputs: {region: eu}}`, "/triggers/0/schedule", RuleFormat},
		"short every": {`  - schedule: {every: 500ms, inputs: {region: eu}}`, "/triggers/0/schedule", RuleFormat},
		"both":        {`  - schedule: {every: 5s, cron: "* * * * *", inputs: {region: eu}}`, "/triggers/0/schedule", RuleFormat},
		"neither":     {`  - schedule: {inputs: {region: eu}}`, "/triggers/0/schedule", RuleFormat},
		"bad input":   {`  - schedule: {every: 5s, inputs: {region: asia}}`, "/triggers/0/schedule/inputs/region", RuleType},
		"unknown":     {`  - schedule: {every: 5s, inputs: {region: eu, colour: red}}`, "/triggers/0/schedule/inputs/colour", RuleReference},
		"missing":     {`  - schedule: {every: 5s}`, "/triggers/0/schedule", RuleRequired},
		"hook name":   {`  - webhook: {name: "../x", secret_env: S}`, "/triggers/0/webhook/name", RuleFormat},
		"hook twice":  {"  - webhook: {name: a, secret_env: S}\n  - webhook: {name: a, secret_env: T}", "/triggers/1/webhook/name", RuleDuplicateID},
		"two kinds":   {`  - {webhook: {name: a, secret_env: S}, schedule: {every: 5s, inputs: {region: eu}}}`, "/triggers/0", ""},
		"catch_up":    {`  - schedule: {every: 5s, inputs: {region: eu}, catch_up: some}`, "/triggers/0/schedule/catch_up", RuleEnum},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := Check([]byte(triggerDoc(tc.triggers+"\n")), Options{})
			found := false
			for _, v := range res.Violations {
				if v.Path == tc.path && (tc.rule == "" || v.Rule == tc.rule) {
					found = true
				}
			}
			if !found {
				t.Fatalf("no %s violation at %s in %v", tc.rule, tc.path, res.Violations)
			}
		})
	}
}

// A cron schedule read in Europe/Paris keeps its wall-clock time across
// both daylight-saving changes of 2026 (29 March, 25 October).
func TestCronAcrossDST(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip("no time zone database:", err)
	}
	for _, tc := range []struct {
		cron  string
		from  time.Time
		want  []time.Time
		hours []float64
	}{
		{"0 9 * * *", time.Date(2026, 3, 27, 12, 0, 0, 0, paris),
			[]time.Time{time.Date(2026, 3, 28, 9, 0, 0, 0, paris), time.Date(2026, 3, 29, 9, 0, 0, 0, paris), time.Date(2026, 3, 30, 9, 0, 0, 0, paris)},
			[]float64{23, 24}},
		{"0 9 * * *", time.Date(2026, 10, 24, 0, 0, 0, 0, paris),
			[]time.Time{time.Date(2026, 10, 24, 9, 0, 0, 0, paris), time.Date(2026, 10, 25, 9, 0, 0, 0, paris), time.Date(2026, 10, 26, 9, 0, 0, 0, paris)},
			[]float64{25, 24}},
	} {
		c, err := (&Schedule{Cron: tc.cron, Timezone: "Europe/Paris"}).Clock()
		if err != nil {
			t.Fatal(err)
		}
		at := tc.from
		var got []time.Time
		for range tc.want {
			at = c.Next(at)
			got = append(got, at)
		}
		for i := range tc.want {
			if !got[i].Equal(tc.want[i]) {
				t.Fatalf("%s from %s: instant %d = %s, want %s", tc.cron, tc.from, i, got[i], tc.want[i])
			}
			if got[i].In(paris).Hour() != 9 {
				t.Fatalf("instant %s is not 09:00 in Paris", got[i].In(paris))
			}
		}
		for i, h := range tc.hours {
			if d := got[i+1].Sub(got[i]).Hours(); d != h {
				t.Fatalf("%s: %v between instants %d and %d, want %vh", tc.cron, d, i, i+1, h)
			}
		}
	}
}

func TestEveryClock(t *testing.T) {
	c, err := (&Schedule{Every: "1d2h"}).Clock()
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := c.Next(t0); got.Sub(t0) != 26*time.Hour {
		t.Fatalf("next = %s", got)
	}
	if _, err := (&Schedule{Cron: "TZ=Europe/Paris 0 9 * * *"}).Clock(); err == nil || !strings.Contains(err.Error(), "timezone") {
		t.Fatalf("a time zone inside the expression: %v", err)
	}
}
