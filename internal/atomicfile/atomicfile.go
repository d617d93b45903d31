package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Write calls write with a temporary file in path's folder and, when write returns nil, syncs
// the file and renames it to path (to the file path links to, when path is a symbolic link).
// On any error the temporary file is removed and path is left as it was.
func Write(path string, write func(io.Writer) error) error {
	target, err := Resolve(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	mode := fs.FileMode(0o644)
	switch st, err := os.Stat(target); {
	case err == nil && st.IsDir():
		return fmt.Errorf("%s is a folder: give a file name", path)
	case err == nil:
		mode = st.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = write(f)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, target)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// WriteFile writes data to path as Write does.
func WriteFile(path string, data []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Resolve returns the absolute path p stands for with every symbolic link resolved: of p itself
// when it exists, else of its folder (which must exist). A link to a file that does not exist
// yet stands for that file.
func Resolve(p string) (string, error) { return resolve(p, 0) }

func resolve(p string, depth int) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if st, err := os.Lstat(abs); err == nil {
		r, err := filepath.EvalSymlinks(abs)
		if err == nil {
			return r, nil
		}
		if st.Mode()&os.ModeSymlink == 0 || depth > 40 {
			return "", err
		}
		to, err := os.Readlink(abs)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(to) {
			to = filepath.Join(filepath.Dir(abs), to)
		}
		return resolve(to, depth+1)
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return "", fmt.Errorf("its folder %s does not exist", filepath.Dir(p))
	}
	return filepath.Join(dir, filepath.Base(abs)), nil
}
