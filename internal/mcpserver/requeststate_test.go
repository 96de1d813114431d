package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/service"
)

// A multi round-trip's requestState is signed with the server's key: one
// the server signed opens, a forged one (the same shape, unsigned, or
// altered) is refused before anything is read or answered.
func TestRequestStateIsSigned(t *testing.T) {
	e := newEnv(t, Options{}, service.Options{})
	cs := e.connect(nil)
	b, _ := json.Marshal(elicitState{Root: "run-of-someone-else", Token: "sw1.x.y", Mode: "form"})
	forged := base64.RawURLEncoding.EncodeToString(b)
	signed := e.srv.encodeState(elicitState{Root: "r", Token: "t", Mode: "form"})
	altered := strings.Replace(signed, signed[:4], "AAAA", 1)
	for name, state := range map[string]string{"unsigned": forged, "altered": altered, "unsigned but dotted": forged + ".AAAA"} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_resume", Arguments: map[string]any{"run_id": "r"}, RequestState: state})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out, _ := json.Marshal(res.StructuredContent)
		if !res.IsError || !strings.Contains(string(out), "requestState is not one this server issued") {
			t.Errorf("%s: %s (error %v)", name, out, res.IsError)
		}
	}
	if st, err := e.srv.decodeState(signed); err != nil || st.Root != "r" {
		t.Fatalf("a state the server signed: %+v %v", st, err)
	}
}
