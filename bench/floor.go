package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
)

// floorFlag makes the bench binary serve as the floor server (floorServe)
// instead of measuring: `bench -floor-server RESULT.json`;
// floorHTTPFlag the same over HTTP (floorHTTP).
const (
	floorFlag     = "-floor-server"
	floorHTTPFlag = "-floor-http"
)

// floorProtocol is the protocol version the floor server answers with.
const floorProtocol = "2025-11-25"

// floorServe is the least an MCP server over stdio can do for the
// tool-call figure: a loop that decodes each line just enough to find its
// id and method, answers initialize, and answers every tools/call with the
// same bytes (the answers to lines read together in one write) — result, a result stepwise gave for run_get — doing no work
// and using no SDK. What the driver achieves against it is the ceiling the
// driver (the same for every server) and the transport put on any server
// sending that answer.
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
		if answer := floorAnswer(line, result); answer != nil {
			w.Write(append(answer, '\n'))
		}
		// Answers to messages read together go out together: the
		// write waits while another whole line is already read.
		if next, _ := r.Peek(r.Buffered()); bytes.IndexByte(next, '\n') >= 0 {
			continue
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
}

// floorAnswer is the floor server's answer to one JSON-RPC message (nil
// for notifications, responses and what is not JSON).
func floorAnswer(msg []byte, result json.RawMessage) []byte {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(msg, &m) != nil || len(m.ID) == 0 {
		return nil
	}
	switch m.Method {
	case "initialize":
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"floor","version":"1"}}}`, m.ID, floorProtocol)
	case "tools/call":
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, result)
	default:
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, m.ID)
	}
}

// floorHTTP is floorServe over streamable HTTP without sessions: each POST
// to /mcp carries one message and gets its answer as application/json (202
// for notifications); the stream a client may open with GET is refused
// (405), which the protocol allows.
func floorHTTP(result json.RawMessage) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		msg, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		answer := floorAnswer(msg, result)
		if answer == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	})
}

// floorMain serves the result in path as the floor server: over stdin and
// stdout, or with overHTTP on a loopback port it reports on stderr as
// stepwise does.
func floorMain(path string, overHTTP bool) {
	result, err := os.ReadFile(path)
	if err == nil && !json.Valid(result) {
		err = fmt.Errorf("%s is not JSON", path)
	}
	if err == nil && !overHTTP {
		err = floorServe(os.Stdin, os.Stdout, result)
	}
	if err == nil && overHTTP {
		var ln net.Listener
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err == nil {
			fmt.Fprintf(os.Stderr, "floor: serving MCP at http://%s/mcp\n", ln.Addr())
			err = http.Serve(ln, floorHTTP(result))
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench floor server:", err)
		os.Exit(1)
	}
}

// floorLoads measures toolLoads against the floor server answering with
// result (a run_get result of stepwise, as it sent it), over
// stdio or, with overHTTP, streamable HTTP.
func floorLoads(ctx context.Context, dir string, overHTTP bool, result Result, n int) (seq, par Load, err error) {
	file := filepath.Join(dir, "floor-result.json")
	if err := os.WriteFile(file, result.raw, 0o644); err != nil {
		return seq, par, err
	}
	self, err := os.Executable()
	if err != nil {
		return seq, par, err
	}
	var cs *Session
	if overHTTP {
		cs, err = httpServer(ctx, exec.Command(self, floorHTTPFlag, file))
	} else {
		cs, err = stdio(ctx, exec.Command(self, floorFlag, file))
	}
	if err != nil {
		return seq, par, err
	}
	defer cs.Close()
	seqs, pars, err := toolLoads(n, toolLoad(ctx, cs, "floor"))
	if err != nil {
		return seq, par, err
	}
	return seqs[0], pars[0], nil
}
