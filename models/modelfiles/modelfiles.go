// Package modelfiles finds the model files that scripts/setup.sh installs and checks them
// against their pinned size and sha256, with one clear error per problem (missing, truncated,
// wrong hash), naming the file and the fix.
package modelfiles

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// EnvModels is the environment variable naming the folder that holds the models
// (scripts/setup.sh installs them there; default DefaultRoot).
const EnvModels = "MHALAB_MODELS"

// ErrModelFile is wrapped by every error about a model file.
var ErrModelFile = errors.New("model file")

// Root returns the folder holding the models: $MHALAB_MODELS, or
// ${XDG_CACHE_HOME:-~/.cache}/mhalab/models (where scripts/setup.sh puts them).
func Root() (string, error) {
	if d := os.Getenv(EnvModels); d != "" {
		return d, nil
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("cannot find the models folder: set %s (%w)", EnvModels, err)
		}
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "mhalab", "models"), nil
}

// Pinned describes one file of a model: its name in the model's folder, and, when known, its
// size in bytes and its sha256 (hex). Zero size / empty hash are not checked.
type Pinned struct {
	Name   string
	Size   int64
	SHA256 string
}

// Check verifies that dir/p.Name exists, is a regular file of p.Size bytes and has sha256
// p.SHA256. fix is appended to the error (e.g. "run scripts/setup.sh --only minilm").
// Errors wrap ErrModelFile.
func Check(dir string, p Pinned, fix string) error {
	path := filepath.Join(dir, p.Name)
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w %s is missing (%s)", ErrModelFile, path, fix)
		}
		return fmt.Errorf("%w %s: %v (%s)", ErrModelFile, path, err, fix)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%w %s is not a regular file (%s)", ErrModelFile, path, fix)
	}
	if p.Size > 0 && st.Size() != p.Size {
		what := "truncated"
		if st.Size() > p.Size {
			what = "too long"
		}
		return fmt.Errorf("%w %s is %s: %d bytes, want %d (%s)", ErrModelFile, path, what, st.Size(), p.Size, fix)
	}
	if p.SHA256 == "" {
		return nil
	}
	got, err := SHA256(path)
	if err != nil {
		return fmt.Errorf("%w %s: %v (%s)", ErrModelFile, path, err, fix)
	}
	if got != p.SHA256 {
		return fmt.Errorf("%w %s has the wrong sha256 %s, want %s (%s)", ErrModelFile, path, got, p.SHA256, fix)
	}
	return nil
}

// SHA256 returns the hex sha256 of the file at path.
func SHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
