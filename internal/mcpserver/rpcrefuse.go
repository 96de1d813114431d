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

// firstByte is the index of b's first byte that is not JSON whitespace.
func firstByte(b []byte) int {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// batchParts splits a JSON-RPC batch into its messages, undecoded.
func batchParts(data []byte) ([]json.RawMessage, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return nil, parseError(err)
		}
		return nil, invalidRequest(jsonrpc.ID{}, "a batch must be an array of messages")
	}
	if len(raws) == 0 {
		return nil, invalidRequest(jsonrpc.ID{}, "empty batch")
	}
	return raws, nil
}

// decodeMessage decodes one JSON-RPC message. Keys are matched exactly
// (encoding/json alone would match them case-insensitively). It fails
// with a *messageError: a parse error for what is not JSON, an invalid
// request (with the message's id when it has a valid one) for JSON that
// is not a JSON-RPC 2.0 message.
func decodeMessage(data []byte) (jsonrpc.Message, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return nil, parseError(err)
		}
		return nil, invalidRequest(jsonrpc.ID{}, "a message must be a JSON object")
	}
	var id jsonrpc.ID
	if v, ok := fields["id"]; ok {
		var raw any
		if json.Unmarshal(v, &raw) == nil {
			id, ok = messageID(raw)
		}
		if !ok {
			return nil, invalidRequest(jsonrpc.ID{}, `"id" must be a string or a number`)
		}
	}
	var version string
	if v, ok := fields["jsonrpc"]; ok && json.Unmarshal(v, &version) != nil {
		version = "?"
	}
	if version != "2.0" {
		return nil, invalidRequest(id, `"jsonrpc" must be "2.0"`)
	}
	if m, ok := fields["method"]; ok {
		var method string
		if err := json.Unmarshal(m, &method); err != nil {
			return nil, invalidRequest(id, `"method" must be a string`)
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: nullAsAbsent(fields["params"])}, nil
	}
	if !id.IsValid() {
		return nil, invalidRequest(id, `a message needs a "method" (a request) or an "id" (a response)`)
	}
	resp := &jsonrpc.Response{ID: id, Result: nullAsAbsent(fields["result"])}
	if e, ok := fields["error"]; ok && string(e) != "null" {
		var we jsonrpc.Error
		if err := json.Unmarshal(e, &we); err != nil {
			return nil, invalidRequest(id, `"error" must be an error object`)
		}
		resp.Error = &we
	}
	return resp, nil
}

// nullAsAbsent: a JSON null decodes into a json.RawMessage as nothing.
func nullAsAbsent(raw json.RawMessage) json.RawMessage {
	if string(raw) == "null" {
		return nil
	}
	return raw
}

// decodeBody decodes a POST's message, or the messages of a batch; it
// fails with a *messageError (for a batch, that of its first message that
// is not one: the POST is refused whole).
func decodeBody(body []byte) ([]jsonrpc.Message, bool, error) {
	if i := firstByte(body); i < len(body) && body[i] == '[' {
		raws, err := batchParts(body)
		if err != nil {
			return nil, true, err
		}
		msgs := make([]jsonrpc.Message, 0, len(raws))
		for _, raw := range raws {
			m, err := decodeMessage(raw)
			if err != nil {
				return nil, true, err
			}
			msgs = append(msgs, m)
		}
		return msgs, true, nil
	}
	m, err := decodeMessage(body)
	if err != nil {
		return nil, false, err
	}
	return []jsonrpc.Message{m}, false, nil
}
