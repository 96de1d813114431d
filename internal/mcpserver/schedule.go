package mcpserver

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/service"
)

// ScheduleListOut is schedule_list's result.
type ScheduleListOut struct {
	Schedules []service.ScheduleInfo `json:"schedules"`
}

// Summary implements summarizer.
func (o ScheduleListOut) Summary() string {
	if len(o.Schedules) == 0 {
		return "No schedules: library workflows declare them under triggers:."
	}
	return fmt.Sprintf("%s.", counted(len(o.Schedules), "schedule"))
}

// ScheduleKeyIn names one schedule.
type ScheduleKeyIn struct {
	Key string `json:"key" jsonschema:"workflow#index, from schedule_list"`
}

// ScheduleOut is one schedule after a pause or resume.
type ScheduleOut struct {
	service.ScheduleInfo
}

// Summary implements summarizer.
func (o ScheduleOut) Summary() string {
	if o.Paused {
		return fmt.Sprintf("Schedule %s paused.", o.Key)
	}
	return fmt.Sprintf("Schedule %s resumed: next fire %s.", o.Key, o.NextFire.Format("2006-01-02 15:04:05Z07:00"))
}

func (s *Server) addScheduleTools() {
	addTool(s, &mcp.Tool{Name: "schedule_list", Title: "List schedules",
		Description: "The library's schedules with their next fire times, paused state and last run.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (ScheduleListOut, error) {
			list, err := s.svc.ListSchedules(ctx)
			return ScheduleListOut{Schedules: list}, err
		})
	for _, paused := range []bool{true, false} {
		name, title, desc := "schedule_pause", "Pause a schedule", "Stop a schedule firing until resumed."
		if !paused {
			name, title, desc = "schedule_resume", "Resume a schedule", "Let a paused schedule fire again, from its next instant."
		}
		addTool(s, &mcp.Tool{Name: name, Title: title, Description: desc,
			Annotations: &mcp.ToolAnnotations{IdempotentHint: true, OpenWorldHint: ptr(false)}},
			func(ctx context.Context, _ *mcp.CallToolRequest, in ScheduleKeyIn) (ScheduleOut, error) {
				info, err := s.svc.PauseSchedule(ctx, in.Key, paused)
				return ScheduleOut{info}, err
			})
	}
}
