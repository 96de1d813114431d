package mcpserver

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"pgregory.net/rapid"
)

// sdkResult is a result as the SDK makes it: json.Marshal without HTML
// escaping.
func sdkResult(t interface{ Fatal(...any) }, v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// jsonValue draws a JSON value: objects, arrays, strings with any runes
// (quotes, backslashes, <>&, control characters, line separators),
// numbers, booleans and null.
func jsonValue(depth int) *rapid.Generator[any] {
	return rapid.Custom(func(t *rapid.T) any {
		kind := rapid.IntRange(0, 5).Draw(t, "kind")
		if depth <= 0 && kind >= 4 {
			kind = 0
		}
		switch kind {
		case 0:
			return rapid.String().Draw(t, "string")
		case 1:
			return rapid.Float64().Draw(t, "number")
		case 2:
			return rapid.Bool().Draw(t, "bool")
		case 3:
			return nil
		case 4:
			return rapid.SliceOfN(jsonValue(depth-1), 0, 4).Draw(t, "array")
		default:
			return rapid.MapOfN(rapid.String(), jsonValue(depth-1), 0, 4).Draw(t, "object")
		}
	})
}

// Every answer goes out as the SDK's encoding would write it, byte for
// byte, on one line.
func TestEncodeMessageIsTheSDKs(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var id jsonrpc.ID
		if rapid.Bool().Draw(t, "string id") {
			id = mustID(rapid.String().Draw(t, "id"))
		} else {
			id = mustID(float64(rapid.Int64Range(-1<<53, 1<<53).Draw(t, "id")))
		}
		resp := &jsonrpc.Response{ID: id, Result: sdkResult(t, jsonValue(3).Draw(t, "result"))}
		got, err := encodeMessage(resp)
		if err != nil {
			t.Fatal(err)
		}
		want, err := jsonrpc.EncodeMessage(resp)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("encodeMessage:\n%s\nthe SDK:\n%s", got, want)
		}
		if bytes.ContainsAny(got, "\n\r") {
			t.Fatalf("a line end in %s", got)
		}
	})
}

// A result that is not compact (white space, line ends between values)
// takes the SDK's encoding, which compacts it: the frame stays one line.
func TestEncodeMessageCompactsWhatIsNotCompact(t *testing.T) {
	resp := &jsonrpc.Response{ID: mustID(float64(7)), Result: json.RawMessage("{\n  \"a\": [1,\r\n 2]\n}")}
	got, err := encodeMessage(resp)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"jsonrpc":"2.0","id":7,"result":{"a":[1,2]}}`; string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	fail := &jsonrpc.Response{ID: mustID("x"), Error: &jsonrpc.Error{Code: -32602, Message: "bad <params>"}}
	got, err = encodeMessage(fail)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := jsonrpc.EncodeMessage(fail)
	if !bytes.Equal(got, want) {
		t.Fatalf("an error answer: got %s, want %s", got, want)
	}
}

func mustID(v any) jsonrpc.ID {
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		panic(err)
	}
	return id
}
