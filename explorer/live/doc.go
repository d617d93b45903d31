// Package live is the live attention explorer behind `mhalab explore`: a small web application
// on 127.0.0.1 that runs a model as the reader types. It shows every layer's and head's
// attention (head view, heatmap, model view: the drawings of the static explorer page, served
// from explorer.ViewJS()), per-head summaries (previous token, first token or sink, induction
// score on a repeated random sequence), and, for a decoder (a Llama-family GGUF file such as
// SmolLM2), the next-token distribution under temperature, top-k and top-p, and generation
// token by token with the KV cache growing (bytes per layer, which query heads share which
// key/value head). An encoder (a BERT-family safetensors folder such as all-MiniLM-L6-v2)
// shows the cosine similarity of two sentences.
//
// # Security
//
// The server listens on 127.0.0.1 only. Every page and API request must carry the server's
// random token (in the URL's token parameter, as Jupyter does, or the X-Mhalab-Token header),
// compared in constant time; a missing or wrong token gets 403. Every response carries a strict
// Content-Security-Policy: scripts, styles and requests only from the server itself, no
// inline script, nothing from another host. The page's files are embedded in the binary.
//
// # Speed
//
// Inputs are padded to a few bucket lengths (16, 32, 64, …) so that typing compiles one program
// per bucket, not one per keystroke: padded keys are masked (encoder) or come after every real
// token (a causal decoder), so the weights of the real tokens do not change.
//
// # Concurrency
//
// A model is not safe for concurrent use: the server runs one request on it at a time.
package live
