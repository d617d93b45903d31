package live

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/mhalab/mhalab/explorer"
)

// Info describes the model the server runs (GET /api/info).
type Info struct {
	Name      string `json:"name"`    // the file or folder
	Kind      string `json:"kind"`    // KindEncoder or KindDecoder
	Backend   string `json:"backend"` // the backend and why it was chosen
	Layers    int    `json:"layers"`
	Heads     int    `json:"heads"`   // query heads per layer
	KVHeads   int    `json:"kvHeads"` // key/value heads per layer (= Heads without GQA)
	HeadDim   int    `json:"headDim"`
	Context   int    `json:"context"`   // the model's positions
	MaxTokens int    `json:"maxTokens"` // the most tokens the explorer shows (≤ Context)
	// Groups[j] are the query heads that read key/value head j (grouped-query attention).
	Groups   [][]int `json:"groups"`
	Ablation bool    `json:"ablation"` // whether heads can be switched off
}

// The kinds of model.
const (
	KindEncoder = "encoder" // BERT family: attention, sentence similarity
	KindDecoder = "decoder" // Llama family: attention, next token, generation
)

// Head names one attention head.
type Head struct {
	Layer int `json:"layer"`
	Head  int `json:"head"`
}

// Request is what the page sends (POST /api/analyze and /api/step).
type Request struct {
	Text  string `json:"text"`
	Text2 string `json:"text2,omitempty"` // encoder: a second sentence to compare with
	// Ablate lists the heads to switch off.
	Ablate []Head `json:"ablate,omitempty"`
	// Temperature (0 = greedy), TopK (0 = all) and TopP (0 or 1 = all): the sampling controls
	// of a decoder (smollm2.Sampling); Seed seeds a generation's random numbers.
	Temperature float64 `json:"temperature"`
	TopK        int     `json:"topK"`
	TopP        float64 `json:"topP"`
	Seed        uint64  `json:"seed"`
	// Bars is how many of the most likely next tokens to return (0: 10; at most 50).
	Bars int `json:"bars"`
	// Reset starts a new generation from Text (POST /api/step); otherwise a step continues the
	// current one when its text is Text.
	Reset bool `json:"reset,omitempty"`
	// Generation asks Analyze for the current generation (Text followed by the tokens generated
	// so far, with its KV cache) instead of Text alone, when the generation's text is Text.
	Generation bool `json:"generation,omitempty"`
}

// Result is what the page shows for one request.
type Result struct {
	Tokens []string `json:"tokens"` // [L] token labels
	IDs    []int    `json:"ids"`    // [L]
	// Attention holds the weights [layer][head][query][key] (see Weights).
	Attention Weights   `json:"attention"`
	Summaries []Summary `json:"summaries"` // one per layer × head, layer-major
	// Next is the decoder's next-token distribution under the request's sampling controls,
	// most likely first (Bars of them); Kept is how many tokens the controls keep in all.
	// Greedy decoding (temperature 0) shows softmax(logits): it picks the first.
	Next []TokenProb `json:"next,omitempty"`
	Kept int         `json:"kept,omitempty"`
	// Similarity is the encoder's cosine similarity of Text and Text2 (when Text2 is given).
	Similarity *Similarity `json:"similarity,omitempty"`
	// Generation (POST /api/step): the generated ids so far, whether the model stopped
	// (end-of-sequence token or a full cache), and the KV cache.
	Generated []int   `json:"generated,omitempty"`
	Done      bool    `json:"done,omitempty"`
	Cache     *Cache  `json:"cache,omitempty"`
	Bucket    int     `json:"bucket"` // the padded length the model ran on
	Millis    float64 `json:"millis"` // time on the server
}

// TokenProb is one bar of the next-token distribution.
type TokenProb struct {
	ID    int     `json:"id"`
	Token string  `json:"token"`
	P     float64 `json:"p"`
}

// Similarity compares the encoder's sentence embeddings (cosine, −1 … 1).
type Similarity struct {
	// Cosine is Text vs Text2 with the ablated heads off (when Text2 is given).
	Cosine *float64 `json:"cosine,omitempty"`
	// With heads ablated: Intact is Text vs Text2 with every head on (when Text2 is given), and
	// SelfIntact the ablated Text vs the intact Text.
	Intact     *float64 `json:"intact,omitempty"`
	SelfIntact *float64 `json:"selfIntact,omitempty"`
}

// Cache describes a decoder's KV cache after a generation step.
type Cache struct {
	Positions int `json:"positions"` // filled
	Capacity  int `json:"capacity"`  // allocated
	// BytesPerLayer is what the filled positions take in one layer: keys and values,
	// KVHeads × Positions × HeadDim float32 each; MHABytesPerLayer the same with one key/value
	// head per query head (no GQA).
	BytesPerLayer    int64 `json:"bytesPerLayer"`
	MHABytesPerLayer int64 `json:"mhaBytesPerLayer"`
	// AllocatedBytes is what the cache's tensors hold now, every layer (measured).
	AllocatedBytes int64 `json:"allocatedBytes"`
}

// Summary is one head's habits on the text (explorer.Summarize) and its induction score.
type Summary struct {
	Layer        int     `json:"layer"`
	Head         int     `json:"head"`
	Entropy      float64 `json:"entropy"`
	MeanDistance float64 `json:"meanDistance"`
	Prev         float64 `json:"prev"`
	First        float64 `json:"first"`
	Self         float64 `json:"self"`
	Induction    float64 `json:"induction"`
	Kind         string  `json:"kind"`
}

// summaries combines explorer.Summarize on the text with the induction scores [layer][head].
func summaries(att [][][][]float32, tokens []string, induction [][]float64) ([]Summary, error) {
	sums, err := explorer.Summarize(att, tokens)
	if err != nil {
		return nil, err
	}
	var out []Summary
	for l, layer := range sums {
		for h, s := range layer {
			ind := 0.0
			if l < len(induction) && h < len(induction[l]) {
				ind = induction[l][h]
			}
			out = append(out, Summary{Layer: l, Head: h, Entropy: s.Entropy, MeanDistance: s.MeanDistance,
				Prev: s.PrevShare, First: s.FirstShare, Self: s.SelfShare, Induction: ind, Kind: s.Kind})
		}
	}
	return out, nil
}

// Weights are attention weights [layer][head][query][key]. In JSON they travel as
// {"layers", "heads", "len", "data"}: data is base64 of little-endian uint16, weight·65535
// rounded (error ≤ 7.7e-6), layer-major — a 30-layer model over 64 tokens is 2.2 MB, not the
// 10 MB of decimal text.
type Weights [][][][]float32

// MarshalJSON encodes w as described on Weights.
func (w Weights) MarshalJSON() ([]byte, error) {
	layers, heads, n := len(w), 0, 0
	if layers > 0 {
		heads = len(w[0])
		if heads > 0 {
			n = len(w[0][0])
		}
	}
	buf := make([]byte, 0, 2*layers*heads*n*n)
	for l := range w {
		if len(w[l]) != heads {
			return nil, fmt.Errorf("live: layer %d has %d heads, want %d", l, len(w[l]), heads)
		}
		for _, rows := range w[l] {
			if len(rows) != n {
				return nil, fmt.Errorf("live: layer %d has %d query rows, want %d", l, len(rows), n)
			}
			for _, row := range rows {
				if len(row) != n {
					return nil, fmt.Errorf("live: layer %d has a row of %d keys, want %d", l, len(row), n)
				}
				for _, p := range row {
					buf = binary.LittleEndian.AppendUint16(buf, quantize(p))
				}
			}
		}
	}
	return json.Marshal(struct {
		Layers int    `json:"layers"`
		Heads  int    `json:"heads"`
		Len    int    `json:"len"`
		Data   string `json:"data"`
	}{layers, heads, n, base64.StdEncoding.EncodeToString(buf)})
}

// quantize maps a weight in [0, 1] to 0 … 65535 (NaN → 0).
func quantize(p float32) uint16 {
	if !(p > 0) {
		return 0
	}
	return uint16(math.Round(float64(min(p, 1)) * 65535))
}
