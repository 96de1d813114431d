// Package library keeps workflow files on disk: saved workflows (which
// must be valid) and drafts (which may not be), each under a safe name.
//
// Every write is atomic — a temporary file in the same directory, fsync,
// rename over the target, fsync of the directory — so a crash at any
// moment leaves either the old file or the new one, whole. Writes are
// serialized by an in-process mutex and a lock file (across processes:
// the CLI and a server may share a home), which is what makes the version
// check of optimistic concurrency and the write one step. What a write
// replaces or a delete removes is kept in the home's previous/ directory:
// a saved workflow is never lost.
//
// The package knows nothing of the workflow language beyond the version
// function it is given.
package library
