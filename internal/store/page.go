package store

import (
	"encoding/base64"
	"strconv"
	"strings"
)

// A ListRuns cursor names the last run of a page: its creation time (Unix
// nanoseconds) and id, base64url. Every backend pages newest first by
// (created_at, id) and shares this form.

// EncodeCursor returns the cursor of the page that ends with r.
func EncodeCursor(r Run) string {
	var at int64
	if !r.CreatedAt.IsZero() {
		at = r.CreatedAt.UnixNano()
	}
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(at, 10) + "/" + r.ID))
}

// DecodeCursor returns the creation time (Unix nanoseconds) and id a
// cursor names; ErrBadCursor for anything EncodeCursor did not make.
func DecodeCursor(c string) (int64, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, "", ErrBadCursor
	}
	at, id, ok := strings.Cut(string(b), "/")
	if !ok {
		return 0, "", ErrBadCursor
	}
	n, err := strconv.ParseInt(at, 10, 64)
	if err != nil {
		return 0, "", ErrBadCursor
	}
	return n, id, nil
}

// Page trims runs read with a limit of limit+1 to a page of limit, and
// returns the cursor of the next page ("" when there is none).
func Page(runs []Run, limit int) ([]Run, string) {
	if len(runs) <= limit {
		return runs, ""
	}
	runs = runs[:limit]
	return runs, EncodeCursor(runs[limit-1])
}
