// Package hostile is the hostile-input suite (issue 21): requests a caller
// may send to `stepwise serve` that would cost unbounded memory or time if
// taken at their word. Each case starts a fresh server from the built
// binary, sends its request over MCP (stdio or streamable HTTP) from a raw
// JSON-RPC client, and asserts that the answer is the expected structured
// error (or answer) within a generous deadline, that the server still
// answers a tools/call afterwards, and that its peak resident memory
// (VmHWM) stays under 512 MB. It reports, per case, the code returned, the
// wall time and the peak RSS. A case may instead want serve to refuse to
// start (an HTTP set-up it must not serve): then the exit code and a line
// of its stderr are the outcome, and it must not have said where it serves.
// A case may also start several servers one after another on one home (a
// step that kills its server, then each restart; a home whose files are
// read once its server exited): every one's peak RSS is checked.
//
//	go test ./e2e/hostile -run Hostile -v -count=1
//
// The cases are one table per item of issue 21, joined in cases_test.go;
// the package holds only tests.
package hostile
