package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"stepwise.dev/stepwise/internal/linelog"
)

// errPoolClosed: the run's driver exited while a step was connecting.
var errPoolClosed = errors.New("the run's connections are closed")

// pool holds the sessions one run opened, by server identity, so that
// steps calling the same server share one connection (one subprocess). It
// lives in the run's action.Scope and is closed with it. Safe for the
// concurrent steps of parallel branches: a second caller waits for the
// first one's connection instead of opening its own.
type pool struct {
	mu     sync.Mutex
	conns  map[string]*conn
	closed bool
}

// conn is one session being opened or open.
type conn struct {
	ready   chan struct{} // closed once session or err is set
	session *session
	err     error
}

func newPool() *pool { return &pool{conns: map[string]*conn{}} }

// get returns the open session for key, opening it with open the first
// time. A failed open is forgotten, so the next call tries again.
func (p *pool) get(ctx context.Context, key string, open func(context.Context) (*session, error)) (*session, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errPoolClosed
	}
	c, ok := p.conns[key]
	if !ok {
		c = &conn{ready: make(chan struct{})}
		p.conns[key] = c
		p.mu.Unlock()
		c.session, c.err = open(ctx)
		if c.err != nil {
			p.forget(key, c)
		}
		close(c.ready)
	} else {
		p.mu.Unlock()
	}
	select {
	case <-c.ready:
		return c.session, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// drop closes a session that broke (the server died, the connection
// failed) and forgets it, so the next step reconnects.
func (p *pool) drop(key string, s *session) {
	p.mu.Lock()
	c, ok := p.conns[key]
	if ok && c.session == s {
		delete(p.conns, key)
	}
	p.mu.Unlock()
	_ = s.close() // broken already: its close error says nothing new
}

func (p *pool) forget(key string, c *conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns[key] == c {
		delete(p.conns, key)
	}
}

// Close closes every session of the run (stdio servers: stdin closed,
// then the process is awaited, terminated, killed).
func (p *pool) Close() error {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	var errs []error
	for key, c := range conns {
		<-c.ready
		if c.session == nil {
			continue
		}
		if err := c.session.close(); err != nil {
			errs = append(errs, fmt.Errorf("close MCP connection %s: %w", key, err))
		}
	}
	return errors.Join(errs...)
}

// session is an open client session and what goes with it.
type session struct {
	cs *mcp.ClientSession
	// stderr is the stdio server's stderr logger (nil over HTTP), flushed
	// once the process is gone.
	stderr *linelog.Writer
}

func (s *session) close() error {
	err := s.cs.Close()
	if s.stderr != nil {
		s.stderr.Flush()
	}
	return err
}
