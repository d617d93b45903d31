package live

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mhalab/mhalab/explorer"
)

//go:embed static
var static embed.FS

// TokenHeader is the request header that may carry the token instead of the URL.
const TokenHeader = "X-Mhalab-Token"

// maxBody is the largest request body the API reads (1 MiB: far more than any model's context).
const maxBody = 1 << 20

// Options configure a Server. The zero value is the command's setting.
type Options struct {
	// Token is the secret every request must carry; "" = 32 random hexadecimal digits.
	Token string
	// FrameAncestors are the origins allowed to show the page in a frame (the
	// Content-Security-Policy's frame-ancestors), e.g. "http://localhost:*"; "" = none.
	FrameAncestors string
}

// Server serves the live explorer for one model.
type Server struct {
	model Model
	info  Info
	token string
	csp   string
	mu    sync.Mutex // one request on the model at a time
	mux   *http.ServeMux
}

// NewServer returns the explorer's server for m.
func NewServer(m Model, o Options) (*Server, error) {
	tok := o.Token
	if tok == "" {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		tok = hex.EncodeToString(b)
	}
	frames := o.FrameAncestors
	if frames == "" {
		frames = "'none'"
	}
	s := &Server{model: m, info: m.Info(), token: tok,
		csp: "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
			"base-uri 'none'; form-action 'none'; frame-ancestors " + frames}
	sub, err := fs.Sub(static, "static")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.authed(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, sub, "index.html")
	}))
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(sub)))
	mux.HandleFunc("GET /view.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		_, _ = w.Write([]byte(explorer.ViewJS()))
	})
	mux.HandleFunc("GET /api/info", s.authed(func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, s.info) }))
	mux.HandleFunc("POST /api/analyze", s.authed(s.api(s.model.Analyze)))
	mux.HandleFunc("POST /api/step", s.authed(s.api(s.model.Step)))
	s.mux = mux
	return s, nil
}

// Token is the secret the URL carries.
func (s *Server) Token() string { return s.token }

// ServeHTTP serves the page, its files and the API, every response with the security headers.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", s.csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer") // the token must not leave in a Referer
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	s.mux.ServeHTTP(w, r)
}

// authed refuses a request without the right token (403).
func (s *Server) authed(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get(TokenHeader)
		if got == "" {
			got = r.URL.Query().Get("token")
		}
		if subtle.ConstantTimeCompare([]byte(got), []byte(s.token)) != 1 {
			writeJSON(w, http.StatusForbidden, errorJSON{"missing or wrong token: open the URL that mhalab explore printed"})
			return
		}
		next(w, r)
	}
}

type errorJSON struct {
	Error string `json:"error"`
}

// api decodes a Request, runs f under the model's lock and answers its Result, or
// {"error"} with 400 (a body that is not a request), 413 (over 1 MiB) or 422 (the model
// refused the input).
func (s *Server) api(f func(Request) (*Result, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req Request
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				writeJSON(w, http.StatusRequestEntityTooLarge, errorJSON{fmt.Sprintf("the request is over %d bytes", maxBody)})
				return
			}
			writeJSON(w, http.StatusBadRequest, errorJSON{"the request is not a JSON request object: " + err.Error()})
			return
		}
		if err := s.checkHeads(req.Ablate); err != nil {
			writeJSON(w, http.StatusUnprocessableEntity, errorJSON{err.Error()})
			return
		}
		s.mu.Lock()
		res, err := f(req)
		s.mu.Unlock()
		if err != nil {
			writeJSON(w, http.StatusUnprocessableEntity, errorJSON{err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, res)
	}
}

func (s *Server) checkHeads(heads []Head) error {
	for _, h := range heads {
		if h.Layer < 0 || h.Layer >= s.info.Layers || h.Head < 0 || h.Head >= s.info.Heads {
			return fmt.Errorf("head %d.%d does not exist: the model has layers 0 … %d and heads 0 … %d", h.Layer, h.Head, s.info.Layers-1, s.info.Heads-1)
		}
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"internal error: the answer does not encode"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// Listening is a server running on 127.0.0.1.
type Listening struct {
	URL  string // http://127.0.0.1:PORT/?token=…
	Port int
	srv  *http.Server
	done chan error
}

// Listen serves s on 127.0.0.1:port (0: a free port) until Close or ctx ends.
func (s *Server) Listen(ctx context.Context, port int) (*Listening, error) {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return nil, fmt.Errorf("--port %d: %w", port, err)
	}
	p := ln.Addr().(*net.TCPAddr).Port
	l := &Listening{URL: fmt.Sprintf("http://127.0.0.1:%d/?token=%s", p, s.token), Port: p,
		srv: &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}, done: make(chan error, 1)}
	go func() { l.done <- l.srv.Serve(ln) }()
	go func() {
		<-ctx.Done()
		_ = l.Close()
	}()
	return l, nil
}

// Wait blocks until the server stops; it returns nil after Close.
func (l *Listening) Wait() error {
	err := <-l.done
	l.done <- err
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops the server.
func (l *Listening) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return l.srv.Shutdown(ctx)
}

// IFrame returns HTML that shows the running explorer in a frame, for a notebook's output
// (GoNB: gonbui.DisplayHTML(l.IFrame(900))). The server must allow the notebook's origin in
// Options.FrameAncestors.
func (l *Listening) IFrame(height int) string {
	u := html.EscapeString(l.URL)
	return fmt.Sprintf(`<iframe src="%s" style="width:100%%;height:%dpx;border:1px solid #ddd" title="mhalab live explorer"></iframe>`+
		`<div style="font-size:12px;color:#666">live explorer at <a href="%s" target="_blank" rel="noopener noreferrer">%s</a></div>`,
		u, height, u, strings.SplitN(l.URL, "?", 2)[0])
}

func htmlEscape(s string) string { return html.EscapeString(s) }
