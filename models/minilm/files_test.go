package minilm

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestPinsAgree: the sha256 and size that Load checks are the ones scripts/setup.sh installs
// (scripts/pins.env), so a pin changed in one place only fails here.
func TestPinsAgree(t *testing.T) {
	f, err := os.Open("../../scripts/pins.env")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pins := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && !strings.HasPrefix(k, "#") {
			pins[k] = v
		}
	}
	for key, want := range map[string]string{
		"MINILM_SAFETENSORS_SHA256": FileWeights().SHA256,
		"MINILM_SAFETENSORS_SIZE":   strconv.FormatInt(FileWeights().Size, 10),
		"MINILM_TOKENIZER_SHA256":   FileTokenizer().SHA256,
		"MINILM_CONFIG_SHA256":      FileConfig().SHA256,
		"MINILM_DIR_NAME":           DirName,
	} {
		if pins[key] != want {
			t.Errorf("scripts/pins.env %s=%q, models/minilm has %q", key, pins[key], want)
		}
	}
}
