package mcpserver

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ToolProfile names the set of built-in tools a server offers.
type ToolProfile string

// The tool profiles.
const (
	// ToolsAll offers every built-in tool (the default).
	ToolsAll ToolProfile = "all"
	// ToolsCore offers only the tools that author and run workflows
	// (coreTools), for agents that pay for every listed byte.
	ToolsCore ToolProfile = "core"
)

// ToolProfiles are the profiles a server knows.
var ToolProfiles = []ToolProfile{ToolsAll, ToolsCore}

// ErrUnknownToolProfile is returned by ParseToolProfile for a name that is
// not one of ToolProfiles.
var ErrUnknownToolProfile = errors.New("unknown tool profile")

// coreTools are ToolsCore's tools: find, read, check, preview and save a
// workflow, find actions, and start, answer and follow a run.
var coreTools = []string{
	"workflow_list", "workflow_get", "workflow_validate", "workflow_plan", "workflow_save",
	"action_search", "action_get",
	"run_start", "run_continue", "run_get",
}

// ParseToolProfile returns the profile of that name ("" is ToolsAll).
func ParseToolProfile(name string) (ToolProfile, error) {
	if name == "" {
		return ToolsAll, nil
	}
	if p := ToolProfile(name); slices.Contains(ToolProfiles, p) {
		return p, nil
	}
	names := make([]string, len(ToolProfiles))
	for i, p := range ToolProfiles {
		names[i] = string(p)
	}
	return "", fmt.Errorf("%w %q: use %s", ErrUnknownToolProfile, name, strings.Join(names, " or "))
}

// offers reports whether the server's profile includes a built-in tool.
func (s *Server) offers(tool string) bool {
	return s.opts.Tools != ToolsCore || slices.Contains(coreTools, tool)
}
