package smollm2

import "fmt"

// WithKVHeads returns the same model with n key/value heads instead of NumKeyValueHeads, n a
// multiple of NumKeyValueHeads that divides NumAttentionHeads: each new head's k_proj and v_proj
// rows [hd, D] are those of the key/value head its query heads read, so every query head sees
// the same keys and values as before and the logits do not change — only the KV cache grows,
// n/NumKeyValueHeads times. With n = NumAttentionHeads this is the plain multi-head model that
// grouped-query attention saves memory against. The other weights are shared with m.
func (m *Model) WithKVHeads(n int) (*Model, error) {
	c := m.Config
	if n < c.NumKeyValueHeads || n%c.NumKeyValueHeads != 0 || c.NumAttentionHeads%n != 0 {
		return nil, fmt.Errorf("smollm2: %d key/value heads: want a multiple of %d that divides %d (the query heads)",
			n, c.NumKeyValueHeads, c.NumAttentionHeads)
	}
	oldGroup, newGroup := c.NumAttentionHeads/c.NumKeyValueHeads, c.NumAttentionHeads/n
	hd, D := c.HeadDim, c.HiddenSize
	w := &Weights{Tensors: make(map[string]*Tensor, len(m.Weights.Tensors))}
	for name, t := range m.Weights.Tensors {
		w.Tensors[name] = t
	}
	for i := range c.NumHiddenLayers {
		for _, proj := range []string{"k_proj", "v_proj"} {
			name := layerPath(i) + ".self_attn." + proj + ".weight"
			old := m.Weights.Tensors[name] // [Hkv·hd, D]
			data := make([]float32, 0, n*hd*D)
			for j := range n { // new head j serves query heads j·newGroup …, which read old head j·newGroup/oldGroup
				o := j * newGroup / oldGroup
				data = append(data, old.Data[o*hd*D:(o+1)*hd*D]...)
			}
			w.Tensors[name] = &Tensor{Shape: []int{n * hd, D}, Data: data} // [n·hd, D]
		}
	}
	out := *m
	out.Config.NumKeyValueHeads = n
	out.Weights = w
	return &out, nil
}
