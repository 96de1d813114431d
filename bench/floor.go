package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

// floorFlag makes the bench binary serve as the floor server (floorServe)
// instead of measuring: `bench -floor-server RESULT.json`.
const floorFlag = "-floor-server"

// floorProtocol is the protocol version the floor server answers with.
const floorProtocol = "2025-11-25"

// floorServe is the least an MCP server over stdio can do for the
// tool-call figure: a loop that decodes each line just enough to find its
// id and method, answers initialize, and answers every tools/call with the
// same bytes — result, a result stepwise gave for run_get — doing no work
// and using no SDK. What the driver achieves against it is the ceiling the
// go-sdk client (the same driver) puts on any server sending that answer.
func floorServe(in io.Reader, out io.Writer, result json.RawMessage) error {
	r := bufio.NewReaderSize(in, 64<<10)
	w := bufio.NewWriter(out)
	for {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(line, &m) != nil || len(m.ID) == 0 {
			continue // notifications, responses
		}
		switch m.Method {
		case "initialize":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"floor","version":"1"}}}`+"\n", m.ID, floorProtocol)
		case "tools/call":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", m.ID, result)
		default:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`+"\n", m.ID)
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
}

// floorMain runs floorServe on stdin and stdout with the result in path.
func floorMain(path string) {
	result, err := os.ReadFile(path)
	if err == nil && !json.Valid(result) {
		err = fmt.Errorf("%s is not JSON", path)
	}
	if err == nil {
		err = floorServe(os.Stdin, os.Stdout, result)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench floor server:", err)
		os.Exit(1)
	}
}

// floorLoads measures toolLoads against the floor server answering with
// result (a run_get result of stepwise, as the client decoded it).
func floorLoads(ctx context.Context, dir string, result any, n int) (seq, par Load, err error) {
	data, err := json.Marshal(result)
	if err != nil {
		return seq, par, err
	}
	file := filepath.Join(dir, "floor-result.json")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		return seq, par, err
	}
	self, err := os.Executable()
	if err != nil {
		return seq, par, err
	}
	cs, err := stdio(ctx, exec.Command(self, floorFlag, file))
	if err != nil {
		return seq, par, err
	}
	defer cs.Close()
	return toolLoads(ctx, cs, "floor", n)
}
