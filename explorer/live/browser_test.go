package live

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/mhalab/mhalab/internal/testenv"
)

// browser is a headless Chromium on a live server, recording every request the page makes and
// every console error, CSP report and uncaught exception.
type browser struct {
	t        *testing.T
	ctx      context.Context
	base     string // http://127.0.0.1:PORT/
	mu       sync.Mutex
	requests []string
	problems []string
}

func newBrowser(t *testing.T, m Model) (*browser, string) {
	exe := testenv.Chromium(t)
	l := listen(t, m, Options{})
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(1300, 1800))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 8*time.Minute)
	t.Cleanup(func() { cancelT(); cancelC(); cancelA() })
	b := &browser{t: t, ctx: ctx, base: strings.SplitN(l.URL, "?", 2)[0]}
	if err := chromedp.Do(ctx); err != nil { // start the browser and open the tab before listening
		t.Fatal(err)
	}
	listen := func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			b.requests = append(b.requests, e.Request.URL)
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning {
				b.problems = append(b.problems, fmt.Sprintf("console.%s %v", e.Type, e.Args))
			}
		case *runtime.EventExceptionThrown:
			b.problems = append(b.problems, "exception: "+(&chromedp.ExceptionError{ExceptionDetails: e.ExceptionDetails}).Error())
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError || e.Entry.Level == log.EntryLevelWarning {
				b.problems = append(b.problems, fmt.Sprintf("log %s: %s %s", e.Entry.Level, e.Entry.Text, e.Entry.URL))
			}
		}
	}
	if err := chromedp.Listen(ctx, listen); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{
		call(ctx, network.Enable, network.EnableParams{}), call(ctx, log.Enable, cdp.Empty{}), call(ctx, runtime.Enable, cdp.Empty{}),
		chromedp.Do(ctx, chromedp.Navigate(l.URL)),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	b.waitJS(`document.body.dataset.ready === "1" && document.body.dataset.shown >= 1 && document.body.dataset.busy === "0"`)
	return b, l.URL
}

func call[P, R any](ctx context.Context, cmd cdp.Command[P, R], p P) error {
	_, err := chromedp.Call(ctx, cmd, p)
	return err
}

// js evaluates expr and stores its JSON value in out.
func (b *browser) js(expr string, out any) {
	b.t.Helper()
	raw, err := chromedp.Run(b.ctx, chromedp.Evaluate[json.RawMessage](expr))
	if err == nil {
		err = json.Unmarshal(raw, out)
	}
	if err != nil {
		b.t.Fatalf("%s: %v", expr, err)
	}
}

// waitJS polls until expr is true (up to 4 minutes: the first shape of a model compiles).
func (b *browser) waitJS(expr string) {
	b.t.Helper()
	deadline := time.Now().Add(4 * time.Minute)
	for {
		var ok bool
		b.js("!!("+expr+")", &ok)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			var errText string
			b.js(`document.getElementById("error").textContent`, &errText)
			b.t.Fatalf("waited 4 minutes for %s (page error: %q)", expr, errText)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// settle waits until the page has rendered an answer newer than shown and is idle; it returns
// the new count.
func (b *browser) settle(shown int) int {
	b.t.Helper()
	b.waitJS(fmt.Sprintf(`document.body.dataset.busy === "0" && (+document.body.dataset.shown > %d || document.body.dataset.error)`, shown))
	var errText string
	b.js(`document.body.dataset.error || ""`, &errText)
	if errText != "" {
		b.t.Fatalf("the page shows an error: %s", errText)
	}
	var n int
	b.js(`+document.body.dataset.shown`, &n)
	return n
}

func (b *browser) shown() int { var n int; b.js(`+document.body.dataset.shown`, &n); return n }

// do runs a script that changes the page (a control's value and its event).
func (b *browser) do(script string) {
	b.t.Helper()
	var x any
	b.js("(() => {"+script+"; return 0})()", &x)
}

// typeText types text into a textarea with real key events (after clearing it).
func (b *browser) typeText(sel, text string) {
	b.t.Helper()
	b.do(fmt.Sprintf(`document.querySelector(%q).value = ""`, sel))
	if err := chromedp.Do(b.ctx, chromedp.SendKeys(chromedp.CSS(sel), text)); err != nil {
		b.t.Fatal(err)
	}
}

// headLines returns the head view's lines: weight by "q,k".
func (b *browser) headLines() (layer, head int, w map[string]float64) {
	var got struct {
		Layer, Head int
		Lines       [][3]float64
	}
	b.js(`({layer: +document.getElementById("headview").dataset.layer, head: +document.getElementById("headview").dataset.head,
	  lines: [...document.querySelectorAll("#headview line.attn")].map(l => [+l.dataset.q, +l.dataset.k, +l.dataset.w])})`, &got)
	w = map[string]float64{}
	for _, l := range got.Lines {
		w[fmt.Sprintf("%d,%d", int(l[0]), int(l[1]))] = l[2]
	}
	return got.Layer, got.Head, w
}

// finish checks that no request left the server and nothing went wrong in the page, and
// writes a screenshot to build/explore/NAME.png ($MHALAB_BUILD/explore with MHALAB_BUILD set).
func (b *browser) finish(name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatal(err)
	}
	dir := os.Getenv("MHALAB_BUILD")
	if dir == "" {
		dir = filepath.Join("..", "..", "build")
	}
	dir = filepath.Join(dir, "explore")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, u := range b.requests {
		if !strings.HasPrefix(u, b.base) {
			b.t.Errorf("a request left the server: %s", u)
		}
	}
	for _, p := range b.problems {
		b.t.Errorf("page problem: %s", p)
	}
	b.t.Logf("%d requests, all to %s; screenshot %s", len(b.requests), b.base, path)
}

// TestMiniLMInChromium types a sentence, picks a layer and a head, and checks that the head
// view draws exactly `mhalab attention --json`'s weights (every weight ≥ 1%, within 2e-5); then
// switches a head off and sees the similarity change.
func TestMiniLMInChromium(t *testing.T) {
	m := openModel(t, NameMiniLM)
	b, _ := newBrowser(t, m)
	var out bytes.Buffer
	if err := attentionJSON(&out); err != nil {
		t.Fatal(err)
	}
	var want struct {
		Tokens     []string
		Attentions [][][][]float32
	}
	if err := json.Unmarshal(out.Bytes(), &want); err != nil {
		t.Fatal(err)
	}
	n := b.shown()
	b.typeText("#text", sentence)
	b.waitJS(fmt.Sprintf(`document.querySelectorAll("#headview text.tok-left").length === %d && document.body.dataset.busy === "0" && +document.body.dataset.shown > %d`, len(want.Tokens), n))
	n = b.shown()
	var tokens []string
	b.js(`[...document.querySelectorAll("#headview text.tok-left")].map(t => t.textContent)`, &tokens)
	if strings.Join(tokens, " ") != strings.Join(want.Tokens, " ") {
		t.Fatalf("the page shows tokens %q, attention --json %q", tokens, want.Tokens)
	}
	b.do(`const l = document.getElementById("layer"); l.value = "3"; l.dispatchEvent(new Event("change"));
	  const h = document.getElementById("head"); h.value = "7"; h.dispatchEvent(new Event("change"))`)
	layer, head, lines := b.headLines()
	if layer != 3 || head != 7 {
		t.Fatalf("head view shows %d.%d, want 3.7", layer, head)
	}
	drawn := 0
	for q, row := range want.Attentions[3][7] {
		for k, p := range row {
			got, ok := lines[fmt.Sprintf("%d,%d", q, k)]
			switch {
			case p >= 0.0101 && !ok:
				t.Errorf("weight %d→%d = %.4f is not drawn", q, k, p)
			case ok && math.Abs(got-float64(p)) > 2e-5:
				t.Errorf("weight %d→%d: the page %.6f, attention --json %.6f", q, k, got, p)
			case ok:
				drawn++
			}
		}
	}
	if drawn != len(lines) {
		t.Errorf("%d lines drawn, %d of them match", len(lines), drawn)
	}
	var before string
	b.js(`document.getElementById("similarity").dataset.cosine`, &before)
	// Switch head 3.7 off: the page asks again and the similarity moves.
	b.do(`document.getElementById("ablate").click()`)
	n = b.settle(n)
	var after struct {
		Cosine, Text string
		Off          bool
	}
	b.js(`({cosine: document.getElementById("similarity").dataset.cosine, text: document.getElementById("similarity").textContent,
	  off: document.querySelector('#grid figure[data-layer="3"][data-head="7"]').classList.contains("off")})`, &after)
	if after.Cosine == before || !after.Off || !strings.Contains(after.Text, "with every head on") {
		t.Errorf("head 3.7 off: similarity %q (was %q), crossed out %v", after.Text, before, after.Off)
	}
	t.Logf("3.7 off: %s", after.Text)
	b.finish("minilm")
}

var (
	generateOnce sync.Once
	generateIDs  []int
	generateErr  error
)

// greedyIDs is `mhalab generate --json --greedy --max-new-tokens 5` of prompt (run once).
func greedyIDs(t *testing.T, prompt string) []int {
	generateOnce.Do(func() {
		var out bytes.Buffer
		generateErr = greedyGenerate(prompt, 5, &out)
		var v struct{ IDs []int }
		if generateErr == nil {
			generateErr = json.Unmarshal(out.Bytes(), &v)
		}
		generateIDs = v.IDs
	})
	if generateErr != nil {
		t.Fatal(generateErr)
	}
	return generateIDs
}

// TestSmolLM2InChromium types a prompt, moves the temperature and checks the bars against the
// API, steps generation five times and checks the ids against `mhalab generate --json
// --greedy`, the KV cache's bytes and the GQA groups, then switches a head off.
func TestSmolLM2InChromium(t *testing.T) {
	m := openModel(t, NameSmolLM2)
	const prompt = "The capital of France is"
	want := greedyIDs(t, prompt)
	b, url := newBrowser(t, m)
	n := b.shown()
	b.typeText("#text", prompt)
	b.waitJS(fmt.Sprintf(`document.querySelectorAll("#headview text.tok-left").length === 5 && document.body.dataset.busy === "0" && +document.body.dataset.shown > %d`, n))
	n = b.shown()
	var groups [][]string
	b.js(`[...document.querySelectorAll("#groups .group")].map(g => [...g.querySelectorAll(".qh")].map(q => q.textContent))`, &groups)
	if got, _ := json.Marshal(groups); string(got) != `[["q0","q1","q2"],["q3","q4","q5"],["q6","q7","q8"]]` {
		t.Errorf("GQA groups on the page: %s", got)
	}
	// Move the temperature to 0.8 and top-p to 0.95: the bars are what the API gives.
	b.do(`const t = document.getElementById("temperature"); t.value = "0.8"; t.dispatchEvent(new Event("input"));
	  const p = document.getElementById("topp"); p.value = "0.95"; p.dispatchEvent(new Event("input"))`)
	n = b.settle(n)
	var bars [][2]float64
	b.js(`[...document.querySelectorAll("#bars .bar")].map(b => [+b.dataset.id, +b.dataset.p])`, &bars)
	api := postJSON(t, url, "api/analyze", Request{Text: prompt, Temperature: 0.8, TopP: 0.95, Seed: 1, Bars: 12})
	if len(bars) == 0 || len(bars) != len(api.Next) {
		t.Fatalf("%d bars, the API %d", len(bars), len(api.Next))
	}
	for i, bar := range bars {
		if int(bar[0]) != api.Next[i].ID || math.Abs(bar[1]-api.Next[i].P) > 1e-9 {
			t.Errorf("bar %d: %v, API %+v", i, bar, api.Next[i])
		}
	}
	t.Logf("T=0.8 top-p 0.95: %d bars, first %q %.3f", len(bars), api.Next[0].Token, api.Next[0].P)
	// Back to greedy; step five tokens.
	b.do(`const t = document.getElementById("temperature"); t.value = "0"; t.dispatchEvent(new Event("input"))`)
	n = b.settle(n)
	for range want {
		b.do(`document.getElementById("step").click()`)
		n = b.settle(n)
	}
	var page struct {
		IDs           string
		Positions     int
		BytesPerLayer int64
	}
	b.js(`({ids: document.getElementById("generated").dataset.ids, positions: +document.getElementById("cache").dataset.positions,
	  bytesPerLayer: +document.getElementById("cache").dataset.bytesPerLayer})`, &page)
	if wantJSON, _ := json.Marshal(want); page.IDs != string(wantJSON) {
		t.Errorf("the page generated %s, generate --json --greedy %s", page.IDs, wantJSON)
	}
	if page.Positions != 5+len(want) || page.BytesPerLayer != int64(page.Positions*2*3*64*4) {
		t.Errorf("cache: %d positions, %d bytes per layer; want %d positions of 2×3×64 float32", page.Positions, page.BytesPerLayer, 5+len(want))
	}
	// Moving the temperature during the generation keeps showing it (its tokens and cache).
	b.do(`const t = document.getElementById("temperature"); t.value = "0.5"; t.dispatchEvent(new Event("input"))`)
	n = b.settle(n)
	var after struct {
		IDs  string
		Bars int
	}
	b.js(`({ids: document.getElementById("generated").dataset.ids, bars: document.querySelectorAll("#bars .bar").length})`, &after)
	if after.IDs != page.IDs || after.Bars == 0 {
		t.Errorf("temperature 0.5 during the generation: ids %s (was %s), %d bars", after.IDs, page.IDs, after.Bars)
	}
	// Switch head 0.0 off and step once more: the page answers without an error.
	b.do(`document.getElementById("ablate").click()`)
	n = b.settle(n)
	b.do(`document.getElementById("step").click()`)
	b.settle(n)
	b.finish("smollm2")
}

func postJSON(t *testing.T, pageURL, path string, r Request) *Result {
	t.Helper()
	body, _ := json.Marshal(r)
	base, tok, _ := strings.Cut(pageURL, "?token=")
	req, _ := http.NewRequest("POST", base+path, bytes.NewReader(body))
	req.Header.Set(TokenHeader, tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res Result
	raw, _ := io.ReadAll(resp.Body)
	var probe struct {
		Next []TokenProb
	}
	if resp.StatusCode != 200 || json.Unmarshal(raw, &probe) != nil {
		t.Fatalf("%s: %d %.200s", path, resp.StatusCode, raw)
	}
	res.Next = probe.Next
	return &res
}
