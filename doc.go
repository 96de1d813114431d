// Package stepwise embeds the stepwise workflow engine in a Go program.
//
// Open an Engine on a home directory or a PostgreSQL database, register
// actions written in Go (RegisterAction, NewAction), then start runs of
// workflows that use them, answer their pauses with the pause's token
// (Continue) and follow them (Get, Wait, List, Cancel). MountTools puts
// stepwise's MCP tools on the program's own go-sdk server; MountWorkflow
// puts one workflow there as a <name>_start / <name>_continue tool pair.
//
// Statuses, pause kinds and error codes are the constants of package
// stepwise.dev/stepwise/code. Errors a caller can act on are *Error.
package stepwise
