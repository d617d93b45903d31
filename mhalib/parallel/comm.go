package parallel

import "fmt"

// Message is one all-reduce of a parallel attention: what it carries, computed from shapes.
type Message struct {
	What  string // e.g. "y = Σ partial outputs"
	Op    string // "sum" or "max"
	Dims  []int  // the shape of the reduced tensor (the same on every device)
	Bytes int64  // its size: what each device contributes and receives
}

func (m Message) String() string {
	return fmt.Sprintf("all-reduce %s %v (%d B): %s", m.Op, m.Dims, m.Bytes, m.What)
}

func message(what, op string, elemBytes int, dims ...int) Message {
	n := int64(elemBytes)
	for _, d := range dims {
		n *= int64(d)
	}
	return Message{What: what, Op: op, Dims: dims, Bytes: n}
}

// HeadParallelMessages are HeadParallel's all-reduces for x [B, L, E] in elements of elemBytes
// bytes (4 for float32), and HeadParallelGradients' extra one when backward. They do not depend
// on the number of heads or devices: each device sends its whole partial output.
func HeadParallelMessages(batch, length, embed, elemBytes int, backward bool) []Message {
	ms := []Message{message("y = Σ_d heads_d·Wo_dᵀ", "sum", elemBytes, batch, length, embed)}
	if backward {
		ms = append(ms, message("dx = Σ_d dx_d (x is on every device)", "sum", elemBytes, batch, length, embed))
	}
	return ms
}

// SequenceParallelMessages are MergeShards' all-reduces for queries [B, h, Lq, ·] and values of
// dv features, and SequenceParallelGradients' extra one for dq [B, h, Lq, dk] when backward.
// They grow with the queries, not with the keys each device holds.
func SequenceParallelMessages(batch, heads, lq, dk, dv, elemBytes int, backward bool) []Message {
	ms := []Message{
		message("m = max_d lse_d", "max", elemBytes, batch, heads, lq, 1),
		message("[Σ_d w_d·o_d | Σ_d w_d]", "sum", elemBytes, batch, heads, lq, dv+1),
	}
	if backward {
		ms = append(ms, message("dq = Σ_d dq_d (q is on every device)", "sum", elemBytes, batch, heads, lq, dk))
	}
	return ms
}

// DataParallelMessages are DataParallelGradients' all-reduces for a pre-LN block of width E
// (LayerNorm weight and bias, in_proj weight and bias, out_proj weight and bias) and the loss.
// They do not depend on the batch.
func DataParallelMessages(embed, elemBytes int) []Message {
	E := embed
	return []Message{
		message("loss", "sum", elemBytes),
		message("d norm.weight", "sum", elemBytes, E),
		message("d norm.bias", "sum", elemBytes, E),
		message("d in_proj_weight", "sum", elemBytes, 3*E, E),
		message("d in_proj_bias", "sum", elemBytes, 3*E),
		message("d out_proj.weight", "sum", elemBytes, E, E),
		message("d out_proj.bias", "sum", elemBytes, E),
	}
}

// TotalBytes sums the messages' bytes.
func TotalBytes(ms []Message) int64 {
	var n int64
	for _, m := range ms {
		n += m.Bytes
	}
	return n
}

// RingBytes is what a ring all-reduce of a message of payload bytes sends from each of n
// devices: 2·(n−1)/n·payload (a reduce-scatter, then an all-gather, each of n−1 steps of
// payload/n). 0 on one device.
func RingBytes(payload int64, n int) int64 {
	if n <= 1 {
		return 0
	}
	return 2 * int64(n-1) * payload / int64(n)
}
