package mcpserver

import (
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzDecodeBody: whatever a POST body holds, decoding it fails cleanly or
// gives messages that encode and decode back to themselves (the stdio
// transport decodes each line with the same decodeMessage).
func FuzzDecodeBody(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"a","result":{"x":[1,2]}}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"x","params":null}]`,
		`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, `[]`, `{`, `null`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		msgs, _, err := decodeBody(body)
		if err != nil {
			return
		}
		for _, m := range msgs {
			if !wellFormed(m) {
				// Accepted as the go-sdk's decoder accepts it (a request
				// with an empty method, an answer with neither result nor
				// error) and ignored by the server: nothing to round-trip.
				continue
			}
			data, err := jsonrpc.EncodeMessage(m)
			if err != nil {
				t.Fatalf("%#v does not encode: %v", m, err)
			}
			again, err := decodeMessage(data)
			if err != nil {
				t.Fatalf("%s does not decode again: %v", data, err)
			}
			if !sameMessage(m, again) {
				t.Fatalf("%#v became %#v through %s", m, again, data)
			}
		}
	})
}

// wellFormed reports whether a message is what JSON-RPC asks for: a
// request names a method, an answer carries a result or an error.
func wellFormed(m jsonrpc.Message) bool {
	switch x := m.(type) {
	case *jsonrpc.Request:
		return x.Method != ""
	case *jsonrpc.Response:
		return len(x.Result) > 0 || x.Error != nil
	}
	return false
}

// sameMessage compares what the wire carries of two messages.
func sameMessage(a, b jsonrpc.Message) bool {
	switch x := a.(type) {
	case *jsonrpc.Request:
		y, ok := b.(*jsonrpc.Request)
		return ok && x.ID == y.ID && x.Method == y.Method && jsonEqual(x.Params, y.Params)
	case *jsonrpc.Response:
		y, ok := b.(*jsonrpc.Response)
		return ok && x.ID == y.ID && jsonEqual(x.Result, y.Result) && (x.Error != nil) == (y.Error != nil)
	}
	return false
}

func jsonEqual(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if jsonUnmarshal(a, &x) != nil || jsonUnmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	return reflect.DeepEqual(x, y)
}
