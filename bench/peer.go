package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Peer is the TypeScript SDK server of bench/peer, or why it cannot run.
type Peer struct {
	dir    string // bench/peer, with node_modules installed
	node   string
	reason string // non-empty: unavailable
}

// Available reports whether the peer can be started.
func (p *Peer) Available() bool { return p.reason == "" }

// findPeer locates node and bench/peer under the module root, installing
// the pinned packages with `npm ci` when node_modules is missing and
// install is set. Any failure makes the peer unavailable, never the
// benchmark fail.
func findPeer(ctx context.Context, root string, install bool) *Peer {
	p := &Peer{dir: filepath.Join(root, "bench", "peer")}
	node, err := exec.LookPath("node")
	if err != nil {
		p.reason = "node not found"
		return p
	}
	p.node = node
	if _, err := os.Stat(filepath.Join(p.dir, "node_modules", "@modelcontextprotocol", "sdk")); err == nil {
		return p
	}
	if !install {
		p.reason = "bench/peer/node_modules is missing (npm ci --prefix bench/peer)"
		return p
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		p.reason = "npm not found"
		return p
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = p.dir
	if out, err := cmd.CombinedOutput(); err != nil {
		p.reason = "npm ci failed: " + firstLine(string(out), err)
	}
	return p
}

// stdio starts the peer over stdio.
func (p *Peer) stdio(ctx context.Context) (*Session, error) {
	if !p.Available() {
		return nil, errors.New(p.reason)
	}
	return stdio(ctx, exec.Command(p.node, filepath.Join(p.dir, "server.mjs")))
}

// http starts the peer listening on 127.0.0.1:0.
func (p *Peer) http(ctx context.Context) (*Session, error) {
	if !p.Available() {
		return nil, errors.New(p.reason)
	}
	return httpServer(ctx, exec.Command(p.node, filepath.Join(p.dir, "server.mjs"), "--http"))
}

// firstLine is the first non-empty line of a command's output, or its
// error.
func firstLine(out string, err error) string {
	for line := range strings.Lines(out) {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return fmt.Sprint(err)
}
