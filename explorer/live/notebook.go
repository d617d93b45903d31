package live

import (
	"context"
	"fmt"
	"os"
	"os/signal"
)

// NotebookFrameAncestors lets a notebook front-end on this machine (JupyterLab at
// http://localhost:8888 or http://127.0.0.1:8888, any port) show the explorer in a frame.
const NotebookFrameAncestors = "http://localhost:* http://127.0.0.1:*"

// NotebookHeight is the height in pixels of the frame Notebook shows.
const NotebookHeight = 900

// Notebook runs the explorer from a notebook cell: it opens model (as Open: "minilm",
// "smollm2", a GGUF file or a BERT folder) on backend ("" = the default), starts the server on
// a free port of 127.0.0.1 with frames allowed from NotebookFrameAncestors, shows it through
// display (GoNB: gonbui.DisplayHTML) and serves until the kernel is interrupted (SIGINT) —
// a GoNB cell is a program of its own, so the server lives as long as the cell runs:
//
//	%%
//	if err := live.Notebook("smollm2", "", gonbui.DisplayHTML); err != nil { panic(err) }
//
// The browser must reach 127.0.0.1 of the kernel's machine (JupyterLab on a laptop); behind a
// JupyterHub, open the URL through the hub's proxy instead.
func Notebook(model, backend string, display func(html string)) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return notebook(ctx, model, backend, display)
}

func notebook(ctx context.Context, model, backend string, display func(html string)) error {
	m, err := Open(model, backend, 0)
	if err != nil {
		return err
	}
	defer m.Close()
	s, err := NewServer(m, Options{FrameAncestors: NotebookFrameAncestors})
	if err != nil {
		return err
	}
	l, err := s.Listen(ctx, 0)
	if err != nil {
		return err
	}
	info := m.Info()
	display(l.IFrame(NotebookHeight) + fmt.Sprintf(`<div style="font-size:12px;color:#666">%s on %s — interrupt the kernel (■) to stop the explorer</div>`,
		htmlEscape(info.Name), htmlEscape(info.Backend)))
	return l.Wait()
}
