// Package explorer turns the attention weights of one sentence — [layer][head][query][key] —
// into what a reader can look at: per-head summaries (Summarize: entropy, mean distance, share
// on the previous token, on [CLS] and on [SEP], and a kind such as "previous token" or
// "delimiter") and a self-contained interactive HTML page (Write): a head view (lines from each
// token to the tokens it attends to, layer and head pickers, hover a token to see only its
// lines), a heatmap of the chosen head, a model view (thumbnails of every layer × head; click
// one to open it) and the summaries as a sortable table.
//
// The page loads nothing: its script, style and data are inline, and its Content-Security-
// Policy forbids any request (default-src 'none'), so it works offline, from a file, inside a
// notebook (IFrame) and in a browser test (explorer_test.go drives headless Chromium).
//
// The drawings live in view.js (ViewJS): the page inlines it, and the live explorer
// (explorer/live, `mhalab explore`) serves the same file, so both show a head the same way.
//
// The package depends on the standard library only: any model's weights can be shown.
package explorer
