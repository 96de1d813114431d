package catalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"stepwise.dev/stepwise/internal/action"
)

// MaxDocumentSize bounds the documents a catalog is imported from.
const MaxDocumentSize = 32 << 20

// isURL reports whether a source is an http or https URL.
func isURL(source string) bool {
	return strings.HasPrefix(source, "http://") || strings.HasPrefix(source, "https://")
}

// isInline reports whether a source is the document itself rather than a
// name for it: JSON, or YAML text of more than one line.
func isInline(source string) bool {
	t := strings.TrimSpace(source)
	return strings.HasPrefix(t, "{") || strings.Contains(t, "\n")
}

// Read returns the document a source names and its location: a local
// file, an http(s) URL when allowURLs (the operator's choice: a URL lets
// callers make the server fetch from its network), or the document itself
// given inline (location ""). client fetches URLs (nil: a client with a
// 30s timeout); a connection its transport refuses (an
// action.NetworkRefusal) is returned as that error.
func Read(ctx context.Context, source string, allowURLs bool, client *http.Client) (data []byte, location string, err error) {
	switch {
	case strings.TrimSpace(source) == "":
		return nil, "", invalid("source is empty: give a file path, a URL or the document")
	case isInline(source):
		if len(source) > MaxDocumentSize {
			return nil, "", invalid("the document is larger than %d bytes", MaxDocumentSize)
		}
		return []byte(source), "", nil
	case isURL(source):
		if !allowURLs {
			return nil, "", fmt.Errorf("%w: %s: this server imports catalogs from files only (the operator allows URLs with --allow-catalog-urls)", ErrURLNotAllowed, source)
		}
		data, err := fetch(ctx, source, client)
		return data, source, err
	}
	return readFile(source)
}

// readFile reads a local document: a regular file, bounded in size.
func readFile(path string) ([]byte, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", invalid("source %s: %v", path, unwrapPath(err))
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, "", invalid("source %s: %v", path, unwrapPath(err))
	}
	if !info.Mode().IsRegular() {
		return nil, "", invalid("source %s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxDocumentSize+1))
	if err != nil {
		return nil, "", invalid("source %s: %v", path, unwrapPath(err))
	}
	if len(data) > MaxDocumentSize {
		return nil, "", invalid("source %s is larger than %d bytes", path, MaxDocumentSize)
	}
	// Recorded absolute: the catalog says where it came from wherever the
	// reader runs.
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return data, path, nil
}

// fetch downloads a document.
func fetch(ctx context.Context, source string, client *http.Client) ([]byte, error) {
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, source, nil)
	if err != nil {
		return nil, invalid("source %s: %v", source, err)
	}
	req.Header.Set("Accept", "application/json, application/yaml;q=0.9, */*;q=0.5")
	resp, err := client.Do(req)
	if err != nil {
		var refusal *action.NetworkRefusal
		if errors.As(err, &refusal) {
			// Not a problem of the document: the server may not fetch
			// from there (its network policy).
			return nil, fmt.Errorf("source %s: %w", source, refusal)
		}
		return nil, invalid("source %s: %v", source, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, invalid("source %s: %s", source, resp.Status)
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, io.LimitReader(resp.Body, MaxDocumentSize+1)); err != nil {
		return nil, invalid("source %s: %v", source, err)
	}
	if buf.Len() > MaxDocumentSize {
		return nil, invalid("source %s is larger than %d bytes", source, MaxDocumentSize)
	}
	return buf.Bytes(), nil
}

// unwrapPath drops the path an *os.PathError repeats.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
