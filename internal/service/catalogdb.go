package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"stepwise.dev/stepwise/internal/catalog"
	"stepwise.dev/stepwise/internal/library"
	"stepwise.dev/stepwise/internal/store/postgres"
)

// dbCatalogs is catalog.Backend over the documents the database keeps
// (postgres.Catalogs): the catalogs replicas share, with the semantics of
// the home's catalogs directory.
type dbCatalogs struct{ docs *postgres.Catalogs }

var _ catalog.Backend = dbCatalogs{}

// dbCatalogsAt is where the database's catalogs are shown to be kept.
const dbCatalogsAt = "database:catalogs"

// dbContext bounds one call to the database (catalog.Backend takes no
// context).
func dbContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

func checkCatalogName(name string) error {
	if err := library.CheckName(name); err != nil {
		return fmt.Errorf("catalog name: %w", err)
	}
	return nil
}

func (d dbCatalogs) Where(name string) string { return dbCatalogsAt + "/" + name }

func (d dbCatalogs) Get(name string) (*catalog.Catalog, error) {
	if err := checkCatalogName(name); err != nil {
		return nil, err
	}
	ctx, cancel := dbContext()
	defer cancel()
	doc, ok, err := d.docs.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: no catalog %q", catalog.ErrNotFound, name)
	}
	return catalog.Decode(doc, name, d.Where(name))
}

func (d dbCatalogs) List() ([]*catalog.Catalog, error) {
	ctx, cancel := dbContext()
	defer cancel()
	names, err := d.docs.Names(ctx)
	if err != nil {
		return nil, err
	}
	var out []*catalog.Catalog
	var errs []error
	for _, name := range names {
		c, err := d.Get(name)
		if errors.Is(err, catalog.ErrNotFound) {
			continue // removed meanwhile
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, c)
	}
	return out, errors.Join(errs...)
}

func (d dbCatalogs) Put(c *catalog.Catalog, overwrite bool) (*catalog.Catalog, error) {
	if err := checkCatalogName(c.Name); err != nil {
		return nil, err
	}
	doc, err := catalog.Encode(c)
	if err != nil {
		return nil, err
	}
	var replaced *catalog.Catalog
	ctx, cancel := dbContext()
	defer cancel()
	err = d.docs.Change(ctx, c.Name, func(old []byte) ([]byte, error) {
		if old == nil {
			return doc, nil
		}
		prev, err := catalog.Decode(old, c.Name, d.Where(c.Name))
		switch {
		case err != nil && !overwrite:
			return nil, err
		case err == nil && !overwrite:
			return nil, fmt.Errorf("%w: catalog %q was imported at %s", catalog.ErrExists, c.Name, prev.ImportedAt.Format("2006-01-02 15:04:05Z"))
		}
		replaced = prev
		return doc, nil
	})
	if err != nil {
		return nil, err
	}
	return replaced, nil
}

// change reads catalog name, hands it to fn and writes what fn leaves
// (or deletes it), under the catalogs' lock.
func (d dbCatalogs) change(name string, fn func(c *catalog.Catalog) (keep bool, err error)) (*catalog.Catalog, error) {
	if err := checkCatalogName(name); err != nil {
		return nil, err
	}
	var out *catalog.Catalog
	ctx, cancel := dbContext()
	defer cancel()
	err := d.docs.Change(ctx, name, func(old []byte) ([]byte, error) {
		if old == nil {
			return nil, fmt.Errorf("%w: no catalog %q", catalog.ErrNotFound, name)
		}
		c, err := catalog.Decode(old, name, d.Where(name))
		if err != nil {
			return nil, err
		}
		keep, err := fn(c)
		if err != nil {
			return nil, err
		}
		out = c
		if !keep {
			return nil, nil
		}
		return catalog.Encode(c)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (d dbCatalogs) Update(name string, fn func(*catalog.Catalog) error) (*catalog.Catalog, error) {
	return d.change(name, func(c *catalog.Catalog) (bool, error) { return true, fn(c) })
}

func (d dbCatalogs) Remove(name string) (*catalog.Catalog, error) {
	return d.change(name, func(*catalog.Catalog) (bool, error) { return false, nil })
}

func (d dbCatalogs) Stamps() (map[string]string, error) {
	ctx, cancel := dbContext()
	defer cancel()
	return d.docs.Stamps(ctx)
}

func (d dbCatalogs) Stamp(name string) string {
	ctx, cancel := dbContext()
	defer cancel()
	st, _ := d.docs.Stamp(ctx, name)
	return st
}
