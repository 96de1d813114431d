package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
)

// httpWire is a wire over streamable HTTP: each message is a POST to the
// endpoint, its answer the response body — application/json, or an event
// stream whose data lines carry messages until the answer comes.
type httpWire struct {
	url      string
	client   *http.Client
	session  string // Mcp-Session-Id, from the answer to initialize
	protocol string // Mcp-Protocol-Version, after initialize
}

// newHTTPWire talks to the MCP endpoint url, keeping enough connections
// open for inFlight calls at once (net/http keeps 2 per host by default:
// the other calls would each open a connection).
func newHTTPWire(url string) *httpWire {
	return &httpWire{url: url, client: &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: 2 * inFlight,
		DisableCompression:  true,
	}}}
}

func (h *httpWire) post(ctx context.Context, msg []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(msg))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if h.session != "" {
		req.Header.Set("Mcp-Session-Id", h.session)
	}
	if h.protocol != "" {
		req.Header.Set("Mcp-Protocol-Version", h.protocol)
	}
	res, err := h.client.Do(req)
	if err != nil {
		return nil, err
	}
	if res.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		res.Body.Close()
		return nil, fmt.Errorf("POST %s: %s: %s", h.url, res.Status, bytes.TrimSpace(body))
	}
	return res, nil
}

func (h *httpWire) roundTrip(ctx context.Context, id int64, msg []byte) (envelope, error) {
	res, err := h.post(ctx, msg)
	if err != nil {
		return envelope{}, err
	}
	defer drain(res)
	if s := res.Header.Get("Mcp-Session-Id"); s != "" && h.session == "" {
		h.session = s // only initialize's answer sets it, before any call runs concurrently
	}
	want := strconv.FormatInt(id, 10)
	ct, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	if ct != "text/event-stream" {
		var env envelope
		if err := json.NewDecoder(res.Body).Decode(&env); err != nil {
			return envelope{}, fmt.Errorf("answer to %s: %w", want, err)
		}
		if string(env.ID) != want {
			return envelope{}, fmt.Errorf("answer to %s has id %s", want, env.ID)
		}
		return env, nil
	}
	return h.fromStream(bufio.NewReader(res.Body), want)
}

// fromStream reads server-sent events until the answer with id want; the
// messages before it (notifications) are not measured.
func (h *httpWire) fromStream(r *bufio.Reader, want string) (envelope, error) {
	var data []byte
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return envelope{}, fmt.Errorf("stream ended before the answer to %s: %w", want, err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if rest, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data = append(data, bytes.TrimPrefix(rest, []byte(" "))...)
			continue
		}
		if len(line) != 0 || len(data) == 0 {
			continue // event, id and retry fields; or a blank line without data
		}
		var env envelope
		if err := json.Unmarshal(data, &env); err != nil {
			return envelope{}, fmt.Errorf("event %q: %w", data, err)
		}
		data = data[:0]
		if env.Method == "" && string(env.ID) == want {
			return env, nil
		}
	}
}

func (h *httpWire) notify(ctx context.Context, msg []byte) error {
	res, err := h.post(ctx, msg)
	if err != nil {
		return err
	}
	drain(res)
	return nil
}

// drain reads the rest of a response before closing it, as the server
// ends it after the answer: a body closed before its end also closes its
// connection, and the next call would pay for a new one.
func drain(res *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20))
	res.Body.Close()
}

func (h *httpWire) setProtocol(version string) { h.protocol = version }

// close ends the session (DELETE, as a client leaving does) and drops the
// connections.
func (h *httpWire) close() {
	if h.session != "" {
		if req, err := http.NewRequest(http.MethodDelete, h.url, nil); err == nil {
			req.Header.Set("Mcp-Session-Id", h.session)
			if res, err := h.client.Do(req); err == nil {
				res.Body.Close()
			}
		}
	}
	h.client.CloseIdleConnections()
}
