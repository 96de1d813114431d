// Package workflow is stepwise's workflow language, version 1: the types of
// a definition, parsing of YAML and JSON with a position for every node,
// validation that reports every violation at once (JSON Schema conformance
// plus semantic rules such as references, goto targets and loop bounds),
// and the canonical form whose sha256 is a workflow's version.
//
// The JSON Schema in schema.json is the single source of the language's
// structure: validation checks documents against it, `stepwise schema`
// prints it and docs/workflow.schema.json is generated from it.
package workflow
