package workflow

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Trigger starts runs of a library workflow without a caller: exactly one
// of Schedule and Webhook is set.
type Trigger struct {
	Schedule *Schedule `json:"schedule,omitempty"`
	Webhook  *Webhook  `json:"webhook,omitempty"`
}

// Catch-up policies of a schedule: what a server does with the instants
// it missed while none ran.
const (
	// CatchUpNone skips missed instants.
	CatchUpNone = "none"
	// CatchUpLast fires once for the latest missed instant (the default).
	CatchUpLast = "last"
	// CatchUpAll fires once for each missed instant, at most MaxCatchUp.
	CatchUpAll = "all"
)

// MaxCatchUp bounds the firings of one catch-up (catch_up: all).
const MaxCatchUp = 100

// MinEvery is the shortest interval a schedule may have.
const MinEvery = time.Second

// Schedule starts a run at the instants of a cron expression (read in
// Timezone, default UTC) or every Every.
type Schedule struct {
	Cron     string         `json:"cron,omitempty"`
	Timezone string         `json:"timezone,omitempty"`
	Every    string         `json:"every,omitempty"`
	Inputs   map[string]any `json:"inputs,omitempty"`
	CatchUp  string         `json:"catch_up,omitempty"`
}

// Webhook serves POST /hooks/NAME: a body signed with the secret held by
// the environment variable SecretEnv becomes a run's inputs.
type Webhook struct {
	Name      string `json:"name"`
	SecretEnv string `json:"secret_env"`
}

// Policy returns the schedule's catch-up policy (CatchUpLast when unset).
func (s *Schedule) Policy() string {
	if s.CatchUp == "" {
		return CatchUpLast
	}
	return s.CatchUp
}

// Clock computes the instants of a schedule.
type Clock interface {
	// Next returns the first instant strictly after t.
	Next(t time.Time) time.Time
}

// every is a Clock of a fixed interval, counted from the anchor.
type every struct{ d time.Duration }

func (e every) Next(t time.Time) time.Time { return t.Add(e.d) }

// cronParser reads five-field expressions and descriptors (@daily).
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// errCronTZ refuses a time zone written inside the expression: it has a
// field of its own.
var errCronTZ = errors.New("write the time zone in timezone:, not in the cron expression")

// Clock parses the schedule: its cron expression in its time zone, or its
// interval (at least MinEvery).
func (s *Schedule) Clock() (Clock, error) {
	switch {
	case s.Cron != "" && s.Every != "":
		return nil, errors.New("a schedule has cron or every, not both")
	case s.Every != "":
		if s.Timezone != "" {
			return nil, errors.New("timezone applies to cron, not to every")
		}
		d, err := ParseDuration(s.Every)
		if err != nil {
			return nil, err
		}
		if d < MinEvery {
			return nil, fmt.Errorf("every %s is shorter than %s", s.Every, MinEvery)
		}
		return every{d}, nil
	case s.Cron != "":
		if strings.HasPrefix(s.Cron, "TZ=") || strings.HasPrefix(s.Cron, "CRON_TZ=") {
			return nil, errCronTZ
		}
		loc := time.UTC
		if s.Timezone != "" {
			l, err := time.LoadLocation(s.Timezone)
			if err != nil || s.Timezone == "Local" {
				return nil, fmt.Errorf("unknown time zone %q: use an IANA name such as Europe/Paris", s.Timezone)
			}
			loc = l
		}
		sched, err := cronParser.Parse(s.Cron)
		if err != nil {
			return nil, fmt.Errorf("cron %q: %v", s.Cron, err)
		}
		return cronClock{sched, loc}, nil
	}
	return nil, errors.New("a schedule needs cron or every")
}

// cronClock reads a cron expression in a time zone.
type cronClock struct {
	s   cron.Schedule
	loc *time.Location
}

func (c cronClock) Next(t time.Time) time.Time { return c.s.Next(t.In(c.loc)).UTC() }

// Webhooks returns the workflow's webhooks in order.
func (wf *Workflow) Webhooks() []*Webhook {
	var out []*Webhook
	for _, t := range wf.Triggers {
		if t != nil && t.Webhook != nil {
			out = append(out, t.Webhook)
		}
	}
	return out
}

// triggers checks every trigger: schedules parse and their inputs fit
// the workflow's; a webhook name appears once in the workflow (the
// library's uniqueness is checked when saving).
func (c *checker) triggers() {
	hooks := map[string]bool{}
	for i, t := range c.wf.Triggers {
		if t == nil {
			continue
		}
		p := fmt.Sprintf("/triggers/%d", i)
		if s := t.Schedule; s != nil {
			if _, err := s.Clock(); err != nil {
				c.at(p+"/schedule", RuleFormat, err.Error(), "")
			}
			for _, name := range sortedKeys(s.Inputs) {
				in, ok := c.wf.Inputs[name]
				ip := p + "/schedule/inputs/" + escapePointer(name)
				if !ok {
					c.at(ip, RuleReference, fmt.Sprintf("the workflow has no input %q", name), "")
					continue
				}
				if v := s.Inputs[name]; v != nil || in.IsRequired() {
					for _, prob := range CheckInput(in, v) {
						c.at(ip, RuleType, fmt.Sprintf("input %q %s", name, prob), "")
					}
				}
			}
			for _, name := range c.inputNames() {
				in := c.wf.Inputs[name]
				if _, given := s.Inputs[name]; !given && in.IsRequired() && in.Env == "" {
					c.at(p+"/schedule", RuleRequired, fmt.Sprintf("the schedule gives no value for the required input %q", name), "add it under inputs:")
				}
			}
		}
		if w := t.Webhook; w != nil && w.Name != "" {
			if hooks[w.Name] {
				c.at(p+"/webhook/name", RuleDuplicateID, fmt.Sprintf("webhook %q is declared twice", w.Name), "")
			}
			hooks[w.Name] = true
		}
	}
}
