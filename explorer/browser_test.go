package explorer

import (
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mhalab/mhalab/internal/testenv"
)

// syntheticAttention returns 6 layers × 12 heads of softmax rows over L tokens from a fixed
// seed, with head 2 of every layer a previous-token head (so heads differ visibly).
func syntheticAttention(L int) [][][][]float32 {
	rng := rand.New(rand.NewPCG(14, 2026))
	att := make([][][][]float32, 6)
	for l := range att {
		att[l] = make([][][]float32, 12)
		for h := range att[l] {
			att[l][h] = make([][]float32, L)
			for q := range L {
				row := make([]float32, L)
				sum := 0.0
				logits := make([]float64, L)
				for k := range L {
					logits[k] = 3 * rng.NormFloat64()
					if h == 2 && k == max(q-1, 0) {
						logits[k] += 20
					}
				}
				for k := range L {
					sum += math.Exp(logits[k])
				}
				for k := range L {
					row[k] = float32(math.Exp(logits[k]) / sum)
				}
				att[l][h][q] = row
			}
		}
	}
	return att
}

// TestExplorerInChromium writes a page and has browser_check.py drive a real headless
// Chromium over the DevTools protocol: choosing a head changes the drawing, hovering a token
// filters its lines, a model-view click opens a head, no network request, a screenshot
// ($MHALAB_SCREENSHOT, default a temporary file). Skips without Chromium (apt install chromium).
func TestExplorerInChromium(t *testing.T) {
	browser := testenv.Chromium(t) // under CI the browser check must run: scripts/test.sh installs Chromium there
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 to drive Chromium")
	}
	tokens := strings.Fields("[CLS] the cat sat on the mat <script>alert(1)</script> & \"quotes\" [SEP]")
	dir := t.TempDir()
	page := filepath.Join(dir, "page.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(f, Data{Title: "synthetic </title>", Sentence: strings.Join(tokens, " "), Tokens: tokens, Attentions: syntheticAttention(len(tokens))}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	shot := os.Getenv("MHALAB_SCREENSHOT")
	if shot == "" {
		shot = filepath.Join(dir, "explorer.png")
	}
	out, err := exec.Command(python, "browser_check.py", "--chromium", browser, "--page", page, "--screenshot", shot).CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("browser_check.py: %v", err)
	}
}
