package minilm

import (
	"fmt"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/mhalab/mhalab/mhalib"
)

// weight returns the loaded variable name in ctx's scope in graph g; it panics with an error
// naming it when it was not loaded (Load always loads every weight).
func weight(ctx *context.Context, g *Graph, name string) *Node {
	v := ctx.GetVariableByScopeAndName(ctx.Scope(), name)
	if v == nil || !v.HasValue() {
		panic(fmt.Errorf("minilm: weight %s/%s is not loaded", ctx.Scope(), name))
	}
	return v.ValueGraph(g)
}

// embeddings is BERT's input layer, in scope "embeddings":
//
//	x = LayerNorm(word[ids] + position[0…L−1] + token_type[0])
//
// ids: [B, L] int32 → x: [B, L, E]. Every token has type 0 (single sentences).
func embeddings(ctx *context.Context, c Config, ids *Node) *Node {
	ctx = ctx.In("embeddings")
	g := ids.Graph()
	B, L := ids.Shape().Dim(0), ids.Shape().Dim(1)
	E := c.HiddenSize
	word := weight(ctx.In("word_embeddings"), g, "weight")            // [V, E]
	position := weight(ctx.In("position_embeddings"), g, "weight")    // [P, E]
	tokenType := weight(ctx.In("token_type_embeddings"), g, "weight") // [T, E]

	x := Gather(word, Reshape(ids, B, L, 1))                        // [B, L, E]
	pos := Slice(position, AxisRange(0, L))                         // [L, E]
	typ := Slice(tokenType, AxisElem(0))                            // [1, E]
	x = Add(x, Reshape(pos, 1, L, E))                               // [B, L, E]
	x = Add(x, Reshape(typ, 1, 1, E))                               // [B, L, E]
	return mhalib.LayerNorm(ctx.In("LayerNorm"), x, c.LayerNormEps) // [B, L, E]
}
