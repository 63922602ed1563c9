package latency

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// OutputFile is a results file opened before a run, so that a path that cannot be
// written fails before anything is measured. Its content goes to a temporary file in
// the same directory, renamed over the path only once it is complete: a failed or
// abandoned write never leaves a truncated file, and never destroys the previous one.
type OutputFile struct {
	path string
	tmp  *os.File
}

// CreateOutput checks that path can be written (its directory exists and takes a new
// file, and path is not a directory) and opens the temporary file for it.
func CreateOutput(path string) (*OutputFile, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("%s is a directory", path)
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("cannot create %s in %s: %w", base, dir, err)
	}
	return &OutputFile{path: path, tmp: tmp}, nil
}

// Path is the file's final path.
func (o *OutputFile) Path() string { return o.path }

// Commit writes the content with write, then replaces the file at Path with it. On any
// error the temporary file is removed and the file at Path is left as it was.
func (o *OutputFile) Commit(write func(io.Writer) error) error {
	if o.tmp == nil {
		return errors.New("output already written or abandoned")
	}
	tmp := o.tmp
	o.tmp = nil
	err := write(tmp)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), o.path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// Abort removes the temporary file, leaving the file at Path as it was. It does nothing
// after Commit.
func (o *OutputFile) Abort() {
	if o.tmp == nil {
		return
	}
	o.tmp.Close()
	os.Remove(o.tmp.Name())
	o.tmp = nil
}
