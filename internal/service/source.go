package service

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"stepwise.dev/stepwise/internal/home"
	"stepwise.dev/stepwise/internal/library"
)

// located is a workflow found by name: a file (of the home's library or
// next to a calling file), or an entry of the database's library, whose
// content came with it.
type located struct {
	// path is the file, or the entry's locator ("database:workflows/x.yaml").
	path string
	// content is a database entry's (inDB).
	content []byte
	inDB    bool
}

// read returns the workflow's text.
func (l located) read() ([]byte, error) {
	if l.inDB {
		return l.content, nil
	}
	return os.ReadFile(l.path)
}

// dir is where the workflow's own sub-workflows are looked up besides the
// library: its file's directory, none for a database entry.
func (l located) dir() string {
	if l.inDB {
		return ""
	}
	return absDir(l.path)
}

// loadPath is what Loaded.Path records: the file, "" for a database entry
// (it has no siblings and no file to show).
func (l located) loadPath() string {
	if l.inDB {
		return ""
	}
	return l.path
}

// filesLibrary reports whether the library is the home's files (not the
// database's).
func (s *Service) filesLibrary() bool {
	_, ok := s.Library.(*library.Library)
	return ok
}

// checkDir is the directory library workflows are checked in (their
// siblings are the library): the home's workflows directory, or none when
// the library is in the database.
func (s *Service) checkDir() string {
	if s.filesLibrary() {
		return s.Home.WorkflowsDir()
	}
	return ""
}

// lookupLibrary finds the saved workflow name: in the home's workflows
// directory (home.FindWorkflow: errors wrap home.ErrUnsafeName or
// home.ErrNotFound), or in the database's library.
func (s *Service) lookupLibrary(name string) (located, error) {
	if s.filesLibrary() {
		p, err := s.Home.FindWorkflow(name)
		return located{path: p}, err
	}
	if !home.ValidName(name) {
		return located{}, fmt.Errorf("%w: %q is not a library name", home.ErrUnsafeName, name)
	}
	f, err := s.Library.Get(library.Saved, name)
	if err != nil {
		return located{}, err
	}
	return located{path: f.Path, content: f.Content, inDB: true}, nil
}

// lookupEntry finds name's entry of kind: located.path is "" when there
// is none (an unsafe name or an entry leading outside is an error).
func (s *Service) lookupEntry(kind library.Kind, name string) (located, error) {
	if l, ok := s.Library.(*library.Library); ok {
		p, err := l.Path(kind, name)
		return located{path: p}, err
	}
	f, err := s.Library.Get(kind, name)
	if errors.Is(err, library.ErrNotFound) {
		return located{}, nil
	}
	if err != nil {
		return located{}, err
	}
	return located{path: f.Path, content: f.Content, inDB: true}, nil
}

// findSubWorkflow finds a workflow called by name: in the library, or next
// to the calling file (in dir).
func (s *Service) findSubWorkflow(dir, name string) (located, error) {
	if !home.ValidName(name) {
		return located{}, fmt.Errorf("%q is not a valid workflow name: %w", name, home.ErrUnsafeName)
	}
	if l, err := s.lookupLibrary(name); err == nil {
		return l, nil
	}
	if dir != "" {
		for _, ext := range []string{".yaml", ".yml", ".json"} {
			p := filepath.Join(dir, name+ext)
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
				return located{path: p}, nil
			}
		}
	}
	return located{}, fmt.Errorf("no workflow named %q in the library%s: %w", name, map[bool]string{true: " or next to the calling file", false: ""}[dir != ""], home.ErrNotFound)
}
