package smollm2

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mhalab/mhalab/models/modelfiles"
)

// The model file scripts/setup.sh installs (step smollm2; pins in scripts/pins.env).
const (
	// DirName is the model's folder under the models folder.
	DirName = "smollm2-135m-instruct"
	// FileName is the GGUF file in it.
	FileName = "SmolLM2-135M-Instruct.Q4_1.gguf"
	// FileSize is its size in bytes (scripts/pins.env SMOLLM2_GGUF_SIZE).
	FileSize = 98362432
)

// DefaultPath is where scripts/setup.sh installs the model:
// ${MHALAB_MODELS:-${XDG_CACHE_HOME:-~/.cache}/mhalab/models}/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf.
func DefaultPath() (string, error) {
	root, err := modelfiles.Root()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, DirName, FileName), nil
}

// CheckDefault returns the default model path when the file is there with its pinned size, or
// an error saying how to install it.
func CheckDefault() (string, error) {
	p, err := DefaultPath()
	if err != nil {
		return "", err
	}
	st, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("smollm2: %s is missing: run scripts/setup.sh --only smollm2 (or pass --model FILE)", p)
	case err != nil:
		return "", fmt.Errorf("smollm2: %s: %w", p, err)
	case st.Size() != FileSize:
		return "", fmt.Errorf("smollm2: %s is %d bytes, want %d: run scripts/setup.sh --only smollm2 again", p, st.Size(), FileSize)
	}
	return p, nil
}

// OpenModel opens the model file path, or the default one when path is "". Errors say how to
// fix them (run the setup step, or which file is corrupt).
func OpenModel(path string) (*Model, error) {
	if path == "" {
		p, err := CheckDefault()
		if err != nil {
			return nil, err
		}
		path = p
	}
	return Open(path)
}
