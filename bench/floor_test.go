package main

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestMain lets the test binary serve as the floor server and as a
// replica, as the bench binary does (floorLoads and pg_replicas_3 execute
// their own binary).
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && (os.Args[1] == floorFlag || os.Args[1] == floorHTTPFlag) {
		floorMain(os.Args[2], os.Args[1] == floorHTTPFlag)
		return
	}
	if len(os.Args) > 1 && os.Args[1] == replicaFlag { // pg_replicas_3 executes its own binary
		replicaMain(os.Args[2:])
		return
	}
	os.Exit(m.Run())
}

// countingWriter counts the writes that reach it.
type countingWriter struct {
	strings.Builder
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.Builder.Write(p)
}

func TestFloorServeAnswers(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2026-07-28"}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"a","method":"server/discover"}`,
		`not json`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_get"}}`,
	}, "\n") + "\n"
	var out countingWriter
	result := json.RawMessage(`{"content":[{"type":"text","text":"x"}],"structuredContent":{"run_id":"r"}}`)
	if err := floorServe(strings.NewReader(in), &out, result); err != nil {
		t.Fatal(err)
	}
	if out.writes != 1 {
		t.Errorf("%d writes, want 1: the answers to lines read together go out together", out.writes)
	}
	var got []map[string]json.RawMessage
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("answer %q is not JSON: %v", sc.Text(), err)
		}
		got = append(got, m)
	}
	if len(got) != 3 {
		t.Fatalf("%d answers, want 3 (initialize, discover, tools/call): %s", len(got), out.String())
	}
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(got[0]["result"], &init); err != nil || init.ProtocolVersion != floorProtocol || string(got[0]["id"]) != "1" {
		t.Errorf("initialize answered %v", got[0])
	}
	if string(got[1]["id"]) != `"a"` || !strings.Contains(string(got[1]["error"]), "-32601") {
		t.Errorf("server/discover answered %v, want method not found", got[1])
	}
	if string(got[2]["id"]) != "2" || string(got[2]["result"]) != string(result) {
		t.Errorf("tools/call answered %v, want the result as given", got[2])
	}
}
