package library

import (
	"fmt"
	"os"
	"path/filepath"
)

// failpoint, when set (by tests), is called between the steps of a write
// with the step's name; an error it returns aborts the write there, as a
// crash would.
var failpoint func(step string) error

func fail(step string) error {
	if failpoint == nil {
		return nil
	}
	return failpoint(step)
}

// writeAtomic replaces path with data so that at every moment path holds
// either its old content or data, whole.
func writeAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	committed := false
	defer func() {
		if !committed {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err := fail("create"); err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := fail("write"); err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: fsync: %w", path, err)
	}
	if err := fail("sync"); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: rename: %w", path, err)
	}
	committed = true
	if err := fail("rename"); err != nil {
		return err
	}
	return syncDir(dir)
}

// syncDir makes a rename or removal in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}

// WriteFile replaces path with data atomically, as the library writes its
// own files: other files of a home (catalogs) get the same guarantee
// without a second implementation.
func WriteFile(path string, data []byte) error { return writeAtomic(path, data) }
