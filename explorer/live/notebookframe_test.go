package live

import (
	"strings"
	"testing"
)

// TestNotebookFrame runs Example's steps, which go test does not run (the example needs the
// model files; here they skip the test outside CI): MiniLM's server, framed the way a notebook
// frames it, serves its page with the notebook's Content-Security-Policy.
func TestNotebookFrame(t *testing.T) {
	m := openModel(t, NameMiniLM)
	l := listen(t, m, Options{FrameAncestors: NotebookFrameAncestors})
	if html := l.IFrame(NotebookHeight); !strings.Contains(html, "<iframe") {
		t.Errorf("IFrame = %q, want an <iframe>", html)
	}
	code, page, header := do(t, "GET", l.URL, "", "")
	if code != 200 || !strings.Contains(page, "Attention, live") {
		t.Errorf("GET %s: %d, page with the title: %v", l.URL, code, strings.Contains(page, "Attention, live"))
	}
	const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors http://localhost:* http://127.0.0.1:*"
	if got := header.Get("Content-Security-Policy"); got != csp {
		t.Errorf("Content-Security-Policy %q, want %q", got, csp)
	}
}
