// Package docs embeds the documentation that stepwise serves to agents:
// the workflow language (WORKFLOWS.md), readable by an LLM on its own.
package docs

import _ "embed"

// Workflows is docs/WORKFLOWS.md, the workflow language specification.
//
//go:embed WORKFLOWS.md
var Workflows string

// WorkflowsEssentials is docs/WORKFLOWS-ESSENTIALS.md: the language's
// essentials in a few KB, pointing to Workflows for the rest.
//
//go:embed WORKFLOWS-ESSENTIALS.md
var WorkflowsEssentials string
