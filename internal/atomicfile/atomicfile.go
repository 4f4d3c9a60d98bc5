// Package atomicfile writes a file so that a reader, or a process started
// after a kill at any instant, finds the old file or the new one, never a
// half-written one: matrix.json and shrink.json are read back to resume.
package atomicfile

import (
	"io"
	"os"
	"path/filepath"
)

// Write writes path through a temporary file beside it (named
// ".BASE.*", which Temps finds), synced and renamed over path.
func Write(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = write(f)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// RemoveTemps deletes the temporary files that a kill in the middle of
// Write left beside path.
func RemoveTemps(path string) {
	olds, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".*"))
	for _, o := range olds {
		os.Remove(o)
	}
}
