//go:build !unix

package library

// lockFile is a no-op where flock is missing: the in-process mutex still
// serializes writes of one process.
func lockFile(string) (func(), error) { return func() {}, nil }
