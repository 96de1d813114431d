//go:build linux

package hostile

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Item 4's inputs: messages that are not JSON, not JSON-RPC, nested
// deeper than a decoder should follow, or larger than a message may be.
// Over stdio each is answered with JSON-RPC's error and the session goes
// on; over HTTP with 400 (413 for a body over the limit) and the same
// error as the body.
const (
	parseError     = -32700
	invalidRequest = -32600
)

var (
	notJSON       = "hello, I am not JSON"
	truncated     = `{"jsonrpc":"2.0","id":3,"method":"tools/li`
	version1      = `{"jsonrpc":"1.0","id":4,"method":"ping"}`
	numericMethod = `{"jsonrpc":"2.0","id":"five","method":5}`
	objectID      = `{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`
	leadingNULs   = "\x00\x00\x00\x00" + `{"jsonrpc":"2.0","id":6,"method":"ping"}`
)

// deepArrays is [ 100,000 times then ] 100,000 times.
func deepArrays() string { return strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) }

// deepParams is a ping whose params nest {"a": 100,000 deep.
func deepParams() string {
	return `{"jsonrpc":"2.0","id":7,"method":"ping","params":` + strings.Repeat(`{"a":`, 100_000) + "1" + strings.Repeat("}", 100_000) + "}"
}

// bigCall is a tools/call of size bytes or a little more, its id first.
func bigCall(id string, size int) string {
	return `{"jsonrpc":"2.0","id":"` + id + `","method":"tools/call","params":{"name":"run_list","arguments":{"x":"` +
		strings.Repeat("a", size) + `"}}}`
}

// rpcOutcome is how the report shows a JSON-RPC error answer: its code
// and its id ("absent" when the answer has no id member).
func rpcOutcome(m Message) string {
	id := string(m.ID)
	if id == "" {
		id = "absent"
	}
	if m.Error == nil {
		return "no error, id " + id
	}
	return fmt.Sprintf("%d id %s", m.Error.Code, id)
}

// lineRefused writes line (and a newline) to the server's stdin and
// returns the answer as "code id ID".
func lineRefused(line string) func(context.Context, *testing.T, *Conn) (string, error) {
	return func(ctx context.Context, _ *testing.T, c *Conn) (string, error) {
		if err := c.Stdio.WriteRaw(ctx, []byte(line+"\n")); err != nil {
			return "", err
		}
		m, err := c.Stdio.Next(ctx)
		if err != nil {
			return "", err
		}
		return rpcOutcome(m), nil
	}
}

// hundredMBLine streams a tools/call of 100 MB, its id first, a megabyte
// at a time, so that neither side holds it whole.
func hundredMBLine(ctx context.Context, _ *testing.T, c *Conn) (string, error) {
	head := `{"jsonrpc":"2.0","id":"hundred","method":"tools/call","params":{"name":"run_list","arguments":{"x":"`
	if err := c.Stdio.WriteRaw(ctx, []byte(head)); err != nil {
		return "", err
	}
	chunk := bytes.Repeat([]byte("b"), 1<<20)
	for range 100 {
		if err := c.Stdio.WriteRaw(ctx, chunk); err != nil {
			return "", err
		}
	}
	if err := c.Stdio.WriteRaw(ctx, []byte("\"}}}\n")); err != nil {
		return "", err
	}
	m, err := c.Stdio.Next(ctx)
	if err != nil {
		return "", err
	}
	return rpcOutcome(m), nil
}

// bodyRefused posts body in the case's session and returns the answer as
// "HTTP status code id ID"; the body must be a JSON-RPC error.
func bodyRefused(body string) func(context.Context, *testing.T, *Conn) (string, error) {
	return func(ctx context.Context, _ *testing.T, c *Conn) (string, error) {
		res, err := c.HTTP.Post(ctx, []byte(body), nil)
		if err != nil {
			return "", err
		}
		defer res.Body.Close()
		data, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		if err != nil {
			return "", err
		}
		var m Message
		if err := json.Unmarshal(data, &m); err != nil {
			return fmt.Sprintf("HTTP %d", res.StatusCode), fmt.Errorf("HTTP %d with a body that is not JSON-RPC: %.200q", res.StatusCode, data)
		}
		return fmt.Sprintf("HTTP %d %s", res.StatusCode, rpcOutcome(m)), nil
	}
}

// The outcomes item 4 wants.
var (
	parseNull  = fmt.Sprintf("%d id null", parseError)
	badHTTP    = fmt.Sprintf("HTTP %d %d id null", http.StatusBadRequest, parseError)
	invalidFor = func(id string) string { return fmt.Sprintf("%d id %s", invalidRequest, id) }
)

// protocolCases are item 4's cases.
func protocolCases() []Case {
	return []Case{
		{Name: "rpc: not JSON, before initialize", Transport: Stdio, NoHandshake: true, Want: parseNull, Run: lineRefused(notJSON)},
		{Name: "rpc: not JSON", Transport: Stdio, Want: parseNull, Run: lineRefused(notJSON)},
		{Name: "rpc: truncated JSON", Transport: Stdio, Want: parseNull, Run: lineRefused(truncated)},
		{Name: `rpc: "jsonrpc":"1.0"`, Transport: Stdio, Want: invalidFor("4"), Run: lineRefused(version1)},
		{Name: "rpc: a numeric method", Transport: Stdio, Want: invalidFor(`"five"`), Run: lineRefused(numericMethod)},
		{Name: "rpc: an object id", Transport: Stdio, Want: invalidFor("null"), Run: lineRefused(objectID)},
		{Name: "rpc: four NULs before a ping", Transport: Stdio, Want: parseNull, Run: lineRefused(leadingNULs)},
		{Name: "rpc: [ x100,000 then ] x100,000", Transport: Stdio, Want: parseNull, Run: lineRefused(deepArrays())},
		{Name: "rpc: params nested 100,000 deep", Transport: Stdio, Want: parseNull, Run: lineRefused(deepParams())},
		{
			Name: "rpc: a 10 MB tools/call", Transport: Stdio, Want: invalidFor(`"ten"`), PeakLimit: 64 << 20,
			Run: lineRefused(bigCall("ten", 10<<20)),
		},
		{
			// Streamed: the server drops the line as it goes by, so its
			// memory stays near what it was.
			Name: "rpc: a 100 MB line, streamed", Transport: Stdio, Want: invalidFor(`"hundred"`), PeakLimit: 64 << 20,
			Deadline: 60 * time.Second, Run: hundredMBLine,
		},
		{Name: "rpc: not JSON over HTTP", Transport: HTTP, Want: badHTTP, Run: bodyRefused(notJSON)},
		{Name: "rpc: four NULs before a ping over HTTP", Transport: HTTP, Want: badHTTP, Run: bodyRefused(leadingNULs)},
		{Name: "rpc: [ x100,000 then ] x100,000 over HTTP", Transport: HTTP, Want: badHTTP, Run: bodyRefused(deepArrays())},
		{Name: "rpc: params nested 100,000 deep over HTTP", Transport: HTTP, Want: badHTTP, Run: bodyRefused(deepParams())},
		{
			Name: `rpc: "jsonrpc":"1.0" over HTTP`, Transport: HTTP, Want: fmt.Sprintf("HTTP %d %s", http.StatusBadRequest, invalidFor("4")),
			Run: bodyRefused(version1),
		},
		{
			Name: "rpc: a 10 MB tools/call over HTTP", Transport: HTTP, Want: fmt.Sprintf("HTTP %d %s", http.StatusRequestEntityTooLarge, invalidFor(`"ten"`)),
			PeakLimit: 64 << 20, Run: bodyRefused(bigCall("ten", 10<<20)),
		},
	}
}
