package live

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeModel answers with fixed weights and counts how many calls run at once.
type fakeModel struct {
	inside, most atomic.Int32
	calls        atomic.Int32
}

func (f *fakeModel) Info() Info {
	return Info{Name: "fake", Kind: KindDecoder, Layers: 2, Heads: 2, KVHeads: 1, HeadDim: 4, Context: 8, MaxTokens: 8, Groups: [][]int{{0, 1}}}
}

func (f *fakeModel) Analyze(r Request) (*Result, error) {
	n := f.inside.Add(1)
	defer f.inside.Add(-1)
	for {
		m := f.most.Load()
		if n <= m || f.most.CompareAndSwap(m, n) {
			break
		}
	}
	f.calls.Add(1)
	time.Sleep(time.Millisecond)
	if r.Text == "" {
		return nil, errors.New("the text has no tokens")
	}
	w := [][]float32{{1, 0}, {0.25, 0.75}}
	return &Result{Tokens: []string{"a", r.Text}, IDs: []int{1, 2}, Attention: Weights{{w, w}, {w, w}}}, nil
}

func (f *fakeModel) Step(r Request) (*Result, error) { return f.Analyze(r) }
func (f *fakeModel) Close()                          {}

func newTestServer(t *testing.T) (*httptest.Server, *Server, *fakeModel) {
	t.Helper()
	m := &fakeModel{}
	s, err := NewServer(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts, s, m
}

func do(t *testing.T, method, url, token, body string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set(TokenHeader, token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// TestToken: the page and the API answer 403 without the token or with a wrong one (also one
// that differs only in its last character, or is a prefix), 200 with it in the URL or the header.
func TestToken(t *testing.T) {
	ts, s, _ := newTestServer(t)
	tok := s.Token()
	if len(tok) != 32 {
		t.Fatalf("token %q: want 32 hexadecimal digits", tok)
	}
	wrong := tok[:31] + string("0123456789abcdef"[(strings.IndexByte("0123456789abcdef", tok[31])+1)%16])
	for _, c := range []struct {
		method, path, header, body string
		want                       int
	}{
		{"GET", "/", "", "", 403},
		{"GET", "/?token=" + wrong, "", "", 403},
		{"GET", "/?token=" + tok[:16], "", "", 403},
		{"GET", "/?token=" + tok, "", "", 200},
		{"GET", "/api/info", "", "", 403},
		{"GET", "/api/info", wrong, "", 403},
		{"GET", "/api/info", tok, "", 200},
		{"POST", "/api/analyze", "", `{"text":"x"}`, 403},
		{"POST", "/api/analyze?token=" + wrong, "", `{"text":"x"}`, 403},
		{"POST", "/api/analyze", tok, `{"text":"x"}`, 200},
		{"POST", "/api/step", wrong, `{"text":"x"}`, 403},
		{"GET", "/static/app.js", "", "", 200}, // the page's code holds no data
		{"GET", "/view.js", "", "", 200},
		{"GET", "/nothing", tok, "", 404},
	} {
		code, body, h := do(t, c.method, ts.URL+c.path, c.header, c.body)
		if code != c.want {
			t.Errorf("%s %s (header %q): %d %s, want %d", c.method, c.path, c.header, code, body, c.want)
		}
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") ||
			strings.Contains(csp, "unsafe") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s %s: Content-Security-Policy %q", c.method, c.path, csp)
		}
		if h.Get("Referrer-Policy") != "no-referrer" || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s %s: headers %v", c.method, c.path, h)
		}
	}
}

// TestPageLoadsNothingFromElsewhere: every src/href of the page is a relative path, and the page
// has no inline script or style (the CSP would block them).
func TestPageLoadsNothingFromElsewhere(t *testing.T) {
	ts, s, _ := newTestServer(t)
	code, page, _ := do(t, "GET", ts.URL+"/?token="+s.Token(), "", "")
	if code != 200 {
		t.Fatalf("page: %d", code)
	}
	for _, bad := range []string{"http:", "https:", "//", "<style", "style=", "onclick", "<script>", "<img"} {
		if strings.Contains(strings.ReplaceAll(page, `xmlns="http://www.w3.org/2000/svg"`, ""), bad) {
			t.Errorf("the page contains %q", bad)
		}
	}
	for _, asset := range []string{"/static/app.js", "/static/app.css", "/view.js"} {
		code, body, h := do(t, "GET", ts.URL+asset, "", "")
		if code != 200 || len(body) < 100 {
			t.Errorf("%s: %d, %d bytes", asset, code, len(body))
		}
		if ct := h.Get("Content-Type"); !strings.Contains(ct, "javascript") && !strings.Contains(ct, "css") {
			t.Errorf("%s: Content-Type %q", asset, ct)
		}
	}
}

// TestBadRequests: a body that is not a request (400), an unknown field (400), over 1 MiB
// (413), a head that does not exist (422), the model's refusal (422) — each one JSON error.
func TestBadRequests(t *testing.T) {
	ts, s, _ := newTestServer(t)
	for _, c := range []struct {
		body string
		want int
		msg  string
	}{
		{`not json`, 400, "not a JSON request"},
		{`{"txt":"x"}`, 400, "unknown field"},
		{`{"text":"` + strings.Repeat("a", maxBody) + `"}`, 413, "over 1048576 bytes"},
		{`{"text":"x","ablate":[{"layer":2,"head":0}]}`, 422, "head 2.0 does not exist"},
		{`{"text":"x","ablate":[{"layer":0,"head":-1}]}`, 422, "does not exist"},
		{`{"text":""}`, 422, "no tokens"},
	} {
		code, body, _ := do(t, "POST", ts.URL+"/api/analyze", s.Token(), c.body)
		if code != c.want || !strings.Contains(body, c.msg) || !strings.HasPrefix(body, `{"error":`) {
			t.Errorf("%.40s: %d %.200s, want %d with %q", c.body, code, body, c.want, c.msg)
		}
	}
}

// TestConcurrentRequests fires 20 requests at once: each gets its own answer, and the model
// never runs two at a time (run with -race for the server's own state).
func TestConcurrentRequests(t *testing.T) {
	ts, s, m := newTestServer(t)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := "/api/analyze"
			if i%2 == 1 {
				path = "/api/step"
			}
			req, _ := http.NewRequest("POST", ts.URL+path, strings.NewReader(fmt.Sprintf(`{"text":"t%d"}`, i)))
			req.Header.Set(TokenHeader, s.Token())
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || !strings.Contains(string(b), fmt.Sprintf(`"t%d"`, i)) {
				errs <- fmt.Errorf("request %d: %d %.100s", i, resp.StatusCode, b)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if m.calls.Load() != 20 || m.most.Load() != 1 {
		t.Errorf("%d calls, at most %d at once: want 20 calls, one at a time", m.calls.Load(), m.most.Load())
	}
}

// TestListenLocalOnly: Listen binds 127.0.0.1 and its URL carries the token.
func TestListenLocalOnly(t *testing.T) {
	l := listen(t, &fakeModel{}, Options{Token: "abc"})
	if want := fmt.Sprintf("http://127.0.0.1:%d/?token=abc", l.Port); l.URL != want {
		t.Errorf("URL %q, want %q", l.URL, want)
	}
	if code, _, _ := do(t, "GET", l.URL, "", ""); code != 200 {
		t.Errorf("GET %s: %d", l.URL, code)
	}
	if !strings.Contains(l.IFrame(500), `src="http://127.0.0.1:`) {
		t.Errorf("IFrame: %s", l.IFrame(500))
	}
}

func TestBucketsAndChunks(t *testing.T) {
	for _, c := range []struct{ n, limit, want int }{{1, 128, 16}, {16, 128, 16}, {17, 128, 32}, {33, 128, 64}, {100, 128, 128}, {100, 80, 100}, {5, 8, 8}} {
		if got := bucket(c.n, c.limit); got != c.want {
			t.Errorf("bucket(%d, %d) = %d, want %d", c.n, c.limit, got, c.want)
		}
	}
	if got := fmt.Sprint(chunks(37)); got != "[32 4 1]" {
		t.Errorf("chunks(37) = %s", got)
	}
}

// listen starts a Server of m with opts on a free local port, closed when the test ends.
func listen(t *testing.T, m Model, opts Options) *Listening {
	t.Helper()
	s, err := NewServer(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.Listen(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}
