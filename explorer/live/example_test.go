package live_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/mhalab/mhalab/explorer/live"
)

// A GoNB cell shows the explorer inline with one line (it serves until the kernel is
// interrupted):
//
//	if err := live.Notebook("smollm2", "", gonbui.DisplayHTML); err != nil { panic(err) }
//
// The same steps by hand: open a model, start the server on 127.0.0.1, show its frame.
// (Compiled, not run by go test: it needs the model files, which not every checkout has;
// TestNotebookFrame runs the same steps and checks what it prints.)
func Example() {
	m, err := live.Open("minilm", "", 0)
	if err != nil {
		fmt.Println(err) // not installed: scripts/setup.sh --only minilm
		return
	}
	defer m.Close()
	s, err := live.NewServer(m, live.Options{FrameAncestors: live.NotebookFrameAncestors})
	if err != nil {
		panic(err)
	}
	l, err := s.Listen(context.Background(), 0)
	if err != nil {
		panic(err)
	}
	defer l.Close()
	html := l.IFrame(live.NotebookHeight) // gonbui.DisplayHTML(html) in a notebook
	resp, err := http.Get(l.URL)
	if err != nil {
		panic(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(strings.Contains(html, "<iframe"), resp.StatusCode, strings.Contains(string(page), "Attention, live"))
	fmt.Println(resp.Header.Get("Content-Security-Policy"))
	// With MiniLM installed it prints:
	//   true 200 true
	//   default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors http://localhost:* http://127.0.0.1:*
}
