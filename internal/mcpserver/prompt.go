package mcpserver

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/docs"
	"stepwise.dev/stepwise/internal/service"
	"stepwise.dev/stepwise/internal/workflow"
)

// addPrompt adds a prompt whose errors are JSON-RPC errors with the
// structured error as data (promptError).
func (s *Server) addPrompt(p *mcp.Prompt, h mcp.PromptHandler) {
	s.mcp.AddPrompt(p, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		res, err := h(ctx, req)
		if err != nil {
			return nil, promptError(s.log, p.Name, err)
		}
		return res, nil
	})
}

func (s *Server) addPrompts() {
	s.addPrompt(&mcp.Prompt{Name: "extend_workflow", Title: "Change a workflow",
		Description: "Change a library workflow as described, validate and preview the change, and save it against the version read.",
		Arguments: []*mcp.PromptArgument{{Name: "name", Description: "the library workflow to change", Required: true},
			{Name: "change", Description: "what to change, in words", Required: true}, languageArg}}, s.extendPrompt)
	s.addPrompt(&mcp.Prompt{Name: "author_workflow", Title: "Author a workflow",
		Description: "Write a new stepwise workflow for a goal, validate it and try it.",
		Arguments:   []*mcp.PromptArgument{{Name: "goal", Description: "what the workflow should achieve", Required: true}, languageArg}},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			goal := strings.TrimSpace(req.Params.Arguments["goal"])
			if goal == "" {
				return nil, argumentsError("goal", "the argument goal is required")
			}
			text := "Author a stepwise workflow for this goal:\n\n" + goal + "\n\n" +
				"1. The language's essentials are attached (stepwise://docs/workflows; the full reference is stepwise://docs/workflows/full, the JSON Schema stepwise://schema/workflow). Check workflow_list first: an existing workflow may already do it or be a sub-workflow to call.\n" +
				"2. Declare inputs for what varies; use `ask` steps for what a person decides during the run (secret: true for credentials), `agent` steps with an output_schema for work you will do, `uses` steps for automated actions.\n" +
				"3. Keep your work as a draft: workflow_save {content, draft: true} stores it even while invalid and returns every violation (each has a path, line, column and often a hint). Fix them and save the draft again (expected_version: the revision it returned) until it is valid; workflow_validate {content} checks without saving.\n" +
				"4. Preview it with workflow_plan {content, inputs}: which inputs are missing, which steps will run, each step's rendered `with`.\n" +
				"5. Put it in the library with workflow_save {content} (this removes the draft), then try it with run_start {workflow, inputs}; answer pauses with run_continue."
			return &mcp.GetPromptResult{Description: "Author a workflow", Messages: append([]*mcp.PromptMessage{userText(text)}, s.languageMessages(req)...)}, nil
		})
	s.addPrompt(&mcp.Prompt{Name: "fix_workflow", Title: "Fix a workflow",
		Description: "Fix an invalid workflow: a library workflow (name) or a definition (content).",
		Arguments: []*mcp.PromptArgument{{Name: "name", Description: "a library workflow's name"},
			{Name: "content", Description: "a workflow definition (YAML or JSON), when it is not in the library"}, languageArg}},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			name, content := strings.TrimSpace(req.Params.Arguments["name"]), req.Params.Arguments["content"]
			var v validationLike
			save := "workflow_save {content} to keep it in the library"
			switch {
			case name != "" && content != "":
				return nil, argumentsError("name", "give name or content, not both")
			case name != "":
				d, err := s.svc.GetWorkflow(ctx, name)
				if err != nil {
					// Not in the library: maybe a draft of that name.
					if dd, derr := s.svc.GetLibraryEntry(ctx, name, true); derr == nil {
						d, err = dd, nil
					}
				}
				if err != nil {
					return nil, err
				}
				content, v = d.Content, validationLike{valid: d.Valid, violations: d.Violations}
				save = fmt.Sprintf("workflow_save {content, expected_version: %q}", d.Revision)
				if d.Draft {
					save = "workflow_save {content} (it puts the fixed workflow in the library and removes the draft)"
				}
			case strings.TrimSpace(content) != "":
				r := s.svc.ValidateContent([]byte(content))
				v = validationLike{valid: r.Valid, violations: r.Violations}
			default:
				return nil, argumentsError("name", "give name (a library workflow) or content (a definition)")
			}
			var b strings.Builder
			b.WriteString("Fix this stepwise workflow so that workflow_validate reports it valid, changing as little as possible.\n\n```\n")
			b.WriteString(content)
			b.WriteString("\n```\n\n")
			if v.valid {
				b.WriteString("It is valid now; check that it does what its description says.\n")
			} else {
				b.WriteString("Violations:\n")
				for _, x := range v.violations {
					fmt.Fprintf(&b, "- %d:%d %s [%s] %s", x.Line, x.Column, x.Path, x.Rule, x.Message)
					if x.Hint != "" {
						b.WriteString(" (hint: " + x.Hint + ")")
					}
					b.WriteString("\n")
				}
			}
			b.WriteString("\nValidate the result with workflow_validate {content} and repeat until it is valid, then save it with " + save + ". The language's essentials are attached (the full reference: stepwise://docs/workflows/full).")
			return &mcp.GetPromptResult{Description: "Fix a workflow", Messages: append([]*mcp.PromptMessage{userText(b.String())}, s.languageMessages(req)...)}, nil
		})
	s.addPrompt(&mcp.Prompt{Name: "run_workflow", Title: "Run a workflow",
		Description: "Run a library workflow with the person: gather its inputs, start it, answer its pauses.",
		Arguments:   []*mcp.PromptArgument{{Name: "name", Description: "the library workflow to run", Required: true}}},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			name := strings.TrimSpace(req.Params.Arguments["name"])
			d, err := s.svc.GetWorkflow(ctx, name)
			if err != nil {
				return nil, err
			}
			var b strings.Builder
			fmt.Fprintf(&b, "Run the stepwise workflow %q", d.Name)
			if d.Title != "" {
				fmt.Fprintf(&b, " (%s)", d.Title)
			}
			b.WriteString(".\n")
			if d.Description != "" {
				b.WriteString(d.Description + "\n")
			}
			if len(d.Inputs) > 0 {
				b.WriteString("\nInputs:\n")
				for _, in := range d.Inputs {
					fmt.Fprintf(&b, "- %s (%s", in.Name, in.Type)
					if in.Required {
						b.WriteString(", required")
					}
					if in.Secret {
						b.WriteString(", secret: never ask for it in the chat; pass \"$NAME\" of a server environment variable or leave it to its env")
					}
					b.WriteString(")")
					if in.Description != "" {
						b.WriteString(": " + in.Description)
					}
					b.WriteString("\n")
				}
			}
			b.WriteString("\nAsk the person for the required inputs you do not know; workflow_plan {name: \"" + d.Name + "\", inputs} shows what is still missing and which steps will run. Then call run_start {workflow: \"" + d.Name + "\", inputs}. " +
				"When the run pauses, follow the pause's how_to_answer: relay questions to the person, do agent steps yourself, and call run_continue with the token. " +
				"When it is still running, follow it with run_get {run_id, wait_seconds}. Report the outputs at the end.")
			if !d.Valid {
				b.WriteString("\n\nNote: the workflow is invalid now; run_start will refuse it. Use the fix_workflow prompt first.")
			}
			return &mcp.GetPromptResult{Description: "Run " + d.Name, Messages: []*mcp.PromptMessage{userText(b.String()),
				{Role: "user", Content: &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: uriWorkflows + "/" + d.Name, MIMEType: "application/yaml", Text: d.Content}}}}}, nil
		})
}

// extendPrompt guides a change to a library workflow: edit, validate,
// preview, save against the version read.
func (s *Server) extendPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	name, change := strings.TrimSpace(req.Params.Arguments["name"]), strings.TrimSpace(req.Params.Arguments["change"])
	if name == "" || change == "" {
		return nil, argumentsError("name", "the arguments name and change are required")
	}
	d, err := s.svc.GetWorkflow(ctx, name)
	if err != nil {
		return nil, err
	}
	text := fmt.Sprintf("Change the stepwise workflow %q (version %s) as follows:\n\n%s\n\n", d.Name, d.Version, change) +
		"The current file is attached, with the language's essentials (the full reference: stepwise://docs/workflows/full). Change as little as possible and keep the file's formatting and comments.\n" +
		"1. Check your edit with workflow_validate {content}; fix every violation.\n" +
		"2. Preview it with workflow_plan {content, inputs}: steps, conditions, rendered `with`.\n" +
		fmt.Sprintf("3. Save it with workflow_save {content, expected_version: %q} (its revision: the hash of the file as you read it). A VERSION_CONFLICT means someone changed it meanwhile: read it again with workflow_get, apply your change to the new content and save with the revision it carries.\n", d.Revision) +
		"Runs already started keep the version they began with."
	msgs := []*mcp.PromptMessage{userText(text),
		{Role: "user", Content: &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: uriWorkflows + "/" + d.Name, MIMEType: "application/yaml", Text: d.Content}}}}
	return &mcp.GetPromptResult{Description: "Extend " + d.Name, Messages: append(msgs, s.languageMessages(req)...)}, nil
}

type validationLike struct {
	valid      bool
	violations []workflow.Violation
}

func userText(text string) *mcp.PromptMessage {
	return &mcp.PromptMessage{Role: "user", Content: &mcp.TextContent{Text: text}}
}

// languageArg is the optional argument of the prompts that attach the
// language: by default its essentials (a few KB, naming the URIs of the
// rest), with "full" the whole reference and the JSON Schema.
var languageArg = &mcp.PromptArgument{Name: "language", Description: "full: attach the whole language reference and its JSON Schema (~85 KB) instead of the essentials"}

// languageMessages embeds the language: its essentials, or with
// language=full the specification and the schema.
func (s *Server) languageMessages(req *mcp.GetPromptRequest) []*mcp.PromptMessage {
	if strings.TrimSpace(req.Params.Arguments["language"]) != "full" {
		return []*mcp.PromptMessage{
			{Role: "user", Content: &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: uriDocs, MIMEType: "text/markdown", Text: docs.WorkflowsEssentials}}},
		}
	}
	return []*mcp.PromptMessage{
		{Role: "user", Content: &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: uriDocsFull, MIMEType: "text/markdown", Text: docs.Workflows}}},
		{Role: "user", Content: &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: uriSchema, MIMEType: "application/schema+json", Text: string(workflow.Schema())}}},
	}
}

// complete offers completions for prompt arguments and resource template
// variables: workflow names and run ids.
func (s *Server) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	p := req.Params
	if p == nil || p.Ref == nil {
		return &mcp.CompleteResult{}, nil
	}
	prefix := p.Argument.Value
	var values []string
	switch {
	case p.Argument.Name == "name" && (p.Ref.Type == "ref/prompt" || p.Ref.URI == "stepwise://workflows/{name}"):
		ws, err := s.svc.ListWorkflows(ctx, "")
		if err != nil {
			return nil, err
		}
		for _, w := range ws {
			if strings.HasPrefix(w.Name, prefix) {
				values = append(values, w.Name)
			}
		}
	case p.Argument.Name == "run_id" && p.Ref.Type == "ref/resource":
		runs, _, err := s.svc.ListRuns(ctx, service.RunFilter{Limit: 200})
		if err != nil {
			return nil, err
		}
		for _, r := range runs {
			if strings.HasPrefix(r.ID, prefix) {
				values = append(values, r.ID)
			}
		}
	}
	sort.Strings(values)
	total := len(values)
	if len(values) > 100 {
		values = values[:100]
	}
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: append([]string{}, values...), Total: total, HasMore: total > len(values)}}, nil
}
