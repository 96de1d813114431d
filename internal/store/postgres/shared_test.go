package postgres

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/store/postgres/pgtest"

	"github.com/jackc/pgx/v5"
)

// Replicas starting at once on a new database each offer a key: all get
// the one written first.
func TestServerKeyIsCreatedOnce(t *testing.T) {
	u := pgtest.Schema(t)
	const n = 6
	stores := make([]*Store, n)
	for i := range stores {
		s, err := Open(context.Background(), u, Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	keys := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() {
			keys[i], errs[i] = s.ServerKey(context.Background(), "server", bytes.Repeat([]byte{byte(i + 1)}, 32))
		})
	}
	wg.Wait()
	for i := range keys {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if !bytes.Equal(keys[i], keys[0]) {
			t.Fatalf("replica %d got key %x, replica 0 %x", i, keys[i], keys[0])
		}
	}
	if len(keys[0]) != 32 || keys[0][0] == 0 || !bytes.Equal(keys[0], bytes.Repeat(keys[0][:1], 32)) {
		t.Fatalf("the key %x is none of the candidates", keys[0])
	}
	again, err := stores[0].ServerKey(context.Background(), "server", make([]byte, 32))
	if err != nil || !bytes.Equal(again, keys[0]) {
		t.Fatalf("a later start got %x (%v), want %x", again, err, keys[0])
	}
}

type notice struct{ topic, name string }

func listen(t *testing.T, f *Feed) <-chan notice {
	t.Helper()
	ch := make(chan notice, 16)
	stop, err := f.Listen(context.Background(), func(topic, name string) { ch <- notice{topic, name} })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return ch
}

func next(t *testing.T, ch <-chan notice) notice {
	t.Helper()
	select {
	case n := <-ch:
		return n
	case <-time.After(10 * time.Second):
		t.Fatal("no notice")
	}
	return notice{}
}

// A notice published by one process reaches the others, not itself; a
// listener whose connection dropped reconnects and says anything may have
// changed.
func TestFeedCrossesProcesses(t *testing.T) {
	u := pgtest.Schema(t)
	ctx := context.Background()
	var feeds [2]*Feed
	for i := range feeds {
		s, err := Open(ctx, u, Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if feeds[i], err = s.Feed(ctx); err != nil {
			t.Fatal(err)
		}
	}
	a, b := listen(t, feeds[0]), listen(t, feeds[1])
	if err := feeds[0].Publish(ctx, "library", "deploy"); err != nil {
		t.Fatal(err)
	}
	if got := next(t, b); got != (notice{"library", "deploy"}) {
		t.Fatalf("b heard %+v", got)
	}
	if err := feeds[1].Publish(ctx, "catalog", "pets"); err != nil {
		t.Fatal(err)
	}
	// a hears b's notice and not its own, which came first.
	if got := next(t, a); got != (notice{"catalog", "pets"}) {
		t.Fatalf("a heard %+v", got)
	}

	// Drop b's listening connection.
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tag, err := conn.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = $1 AND pid <> pg_backend_pid()`,
		`LISTEN `+pgx.Identifier{feeds[1].channel}.Sanitize())
	if err != nil || tag.RowsAffected() != 2 {
		t.Fatalf("terminated %d listeners: %v", tag.RowsAffected(), err)
	}
	if got := next(t, b); got != (notice{}) {
		t.Fatalf("b heard %+v after its connection dropped, want the empty notice", got)
	}
	if got := next(t, a); got != (notice{}) {
		t.Fatalf("a heard %+v after its connection dropped, want the empty notice", got)
	}
	if err := feeds[0].Publish(ctx, "library", "after"); err != nil {
		t.Fatal(err)
	}
	if got := next(t, b); got != (notice{"library", "after"}) {
		t.Fatalf("b heard %+v after reconnecting", got)
	}
}

// A secret page: one per pause, open until its secret is given or it is
// closed or expires, its being given seen through any store on the database.
func TestSecretPages(t *testing.T) {
	u := pgtest.Schema(t)
	ctx := context.Background()
	var pages [2]*SecretPages
	for i := range pages {
		s, err := Open(ctx, u, Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		pages[i] = s.SecretPages()
	}
	a, b := pages[0], pages[1]
	later := time.Now().Add(time.Hour)
	id, err := a.Open(ctx, "page-1", "token-1", []byte(`{"prompt":"p"}`), later)
	if err != nil || id != "page-1" {
		t.Fatalf("open: %q %v", id, err)
	}
	if id, err := b.Open(ctx, "page-2", "token-1", []byte(`{}`), later); err != nil || id != "page-1" {
		t.Fatalf("a second page for the same pause: %q %v", id, err)
	}
	if p, ok, err := b.Page(ctx, "page-1"); err != nil || !ok || string(p) != `{"prompt":"p"}` {
		t.Fatalf("page through b: %s %v %v", p, ok, err)
	}
	if given, exists, err := a.Given(ctx, "page-1"); err != nil || given || !exists {
		t.Fatalf("given before: %v %v %v", given, exists, err)
	}
	if err := b.Complete(ctx, "page-1", later); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := a.Page(ctx, "page-1"); ok {
		t.Fatal("a used page still opens")
	}
	if given, _, err := a.Given(ctx, "page-1"); err != nil || !given {
		t.Fatalf("given after: %v %v", given, err)
	}
	if err := a.Close(ctx, "page-1"); err != nil {
		t.Fatal(err)
	}
	if given, _, _ := b.Given(ctx, "page-1"); !given {
		t.Fatal("closing a used page forgot it was given")
	}

	// Closed, and expired.
	if _, err := a.Open(ctx, "page-3", "token-3", []byte(`{}`), later); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(ctx, "page-3"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := a.Page(ctx, "page-3"); ok {
		t.Fatal("a closed page still opens")
	}
	if _, exists, _ := a.Given(ctx, "page-3"); exists {
		t.Fatal("a closed page still exists")
	}
	if _, err := a.Open(ctx, "page-4", "token-4", []byte(`{}`), time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := b.Page(ctx, "page-4"); ok {
		t.Fatal("an expired page opens")
	}
}
