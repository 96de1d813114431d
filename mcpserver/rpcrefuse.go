package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Incoming messages the server refuses before the MCP server sees them.
// The transports (stdio and HTTP) answer each with JSON-RPC's error and
// go on serving: a parse error (-32700, id null) for what is not JSON, an
// invalid request (-32600) for JSON that is not a JSON-RPC 2.0 message or
// a message over the size limit, with the message's id when it can be
// read (a string or a number), else null.

// messageError is an incoming message refused, and the answer it gets.
type messageError struct {
	id  jsonrpc.ID // the zero ID: unknown (null in the answer)
	err *jsonrpc.Error
}

func (e *messageError) Error() string { return e.err.Message }

// Unwrap makes the JSON-RPC error, and its code, visible to errors.As.
func (e *messageError) Unwrap() error { return e.err }

func parseError(err error) *messageError {
	return &messageError{err: &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "parse error: " + err.Error()}}
}

func invalidRequest(id jsonrpc.ID, format string, args ...any) *messageError {
	return &messageError{id: id, err: &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: " + fmt.Sprintf(format, args...)}}
}

// refusal is err as a message error: a decoding failure that is not one
// already is a parse error.
func refusal(err error) *messageError {
	var me *messageError
	if errors.As(err, &me) {
		return me
	}
	return parseError(err)
}

// tooLarge refuses a message over the limit, with its id when the
// message's first bytes give it.
func tooLarge(limit int, head []byte) *messageError {
	return invalidRequest(headID(head), "the message exceeds %d bytes (the server's limit, set with --max-message-bytes)", limit)
}

// answer is the encoded error answer (one JSON value, no line end).
func (e *messageError) answer() []byte {
	var id any // null unless known
	if e.id.IsValid() {
		id = e.id.Raw()
	}
	data, err := json.Marshal(struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      any            `json:"id"`
		Error   *jsonrpc.Error `json:"error"`
	}{"2.0", id, e.err})
	if err != nil { // not for a string, an int64 and an error of ours
		return []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}`)
	}
	return data
}

// headID is the id of a JSON-RPC message of which only the first bytes
// are at hand, when they hold it as a top-level key (clients write it
// early); the zero ID otherwise.
func headID(head []byte) jsonrpc.ID {
	dec := json.NewDecoder(bytes.NewReader(head))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return jsonrpc.ID{}
	}
	for {
		tok, err := dec.Token()
		key, ok := tok.(string)
		if err != nil || !ok {
			return jsonrpc.ID{}
		}
		if key == "id" {
			var raw any
			if dec.Decode(&raw) != nil {
				return jsonrpc.ID{}
			}
			id, _ := messageID(raw)
			return id
		}
		if !skipValue(dec) {
			return jsonrpc.ID{}
		}
	}
}

// skipValue reads past the next value token by token, so that a value cut
// short by the end of the bytes fails without being copied.
func skipValue(dec *json.Decoder) bool {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return true
		}
	}
}

// messageID is a decoded id as JSON-RPC allows it: a string, a number or
// null (none); ok is false for any other value.
func messageID(raw any) (jsonrpc.ID, bool) {
	switch raw.(type) {
	case nil, string, float64:
		id, err := jsonrpc.MakeID(raw)
		return id, err == nil
	}
	return jsonrpc.ID{}, false
}
