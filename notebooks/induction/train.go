package induction

import (
	"fmt"
	"math/rand/v2"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/train"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers/cosineschedule"
	"github.com/mhalab/mhalab/mhalib/decode"
)

// Config is a training run: the task, the model, and the optimiser's settings.
type Config struct {
	Task         Task
	Model        decode.Decoder // sizes; Vocab = Task.Vocab, MaxLen = Task.Len
	RoPE         bool           // the rotary model (rope.go) instead of decode.Decoder's learned positions
	RotaryDims   int            // with RoPE: how many of each head's features rotate (0: all)
	Batch        int            // sequences per step
	LearningRate float64        // Adam's (the peak, with a schedule)
	WeightDecay  float64        // AdamW's decoupled weight decay; 0: plain Adam
	WarmupSteps  int            // with DecaySteps > 0: linear warm-up from 0 over these steps …
	DecaySteps   int            // … then cosine decay to LearningRate/10 over these steps, repeated (0: constant)
	Seed         uint64         // initial weights (drawn by the backend) and the sequences
}

// Repeat returns notebook 11's run: a random prefix of 12 distinct tokens (vocabulary 32) followed
// by its copy, 24 tokens in all; width 64, 4 heads, 2 layers; Adam at 3e-3, batches of 16.
func Repeat() Config {
	return Config{
		Task:         Task{Vocab: 32, Len: 24, MinPrefix: 12, MaxPrefix: 12},
		Model:        decode.Decoder{Vocab: 32, Embed: 64, Heads: 4, Layers: 2, MaxLen: 24},
		Batch:        16,
		LearningRate: 3e-3,
		Seed:         1,
	}
}

// Induction returns notebook 11's run, the one where induction heads form: sequences of 32 random
// tokens (vocabulary 64) in which a stretch of 8–16 tokens, at a random offset, is repeated right
// after itself, so the distance to copy from varies and only matching tokens finds it. The model
// is attention-only (2 layers of 4 heads, width 64) with rotary positions on half of each head's
// 16 features (RotaryDims 8): the rotated half lets a head prefer a relative position (the
// previous token), the other half compares contents the same way at any distance. AdamW
// (weight decay 0.01) at a peak learning rate of 3e-3: 100 warm-up steps, then a cosine decay
// over InductionSteps − 100 steps; batches of 64.
func Induction() Config {
	return Config{
		Task:         Task{Vocab: 64, Len: 32, MinPrefix: 8, MaxPrefix: 16, AnyTokens: true},
		Model:        decode.Decoder{Vocab: 64, Embed: 64, Heads: 4, Layers: 2, MaxLen: 32},
		RoPE:         true,
		RotaryDims:   8,
		Batch:        64,
		LearningRate: 3e-3,
		WeightDecay:  0.01,
		WarmupSteps:  100,
		DecaySteps:   InductionSteps - 100,
		Seed:         1,
	}
}

// InductionSteps is how long Induction trains (its heads form after about 200–300 steps).
const InductionSteps = 600

// Check reports an inconsistent configuration.
func (c Config) Check() error {
	if c.WeightDecay < 0 || c.WarmupSteps < 0 || c.DecaySteps < 0 {
		return fmt.Errorf("induction: config %+v: WeightDecay, WarmupSteps and DecaySteps must be ≥ 0", c)
	}
	if err := c.Task.Check(); err != nil {
		return err
	}
	if c.RotaryDims < 0 || c.RotaryDims%2 != 0 || c.RotaryDims > c.Model.Embed/max(c.Model.Heads, 1) || (c.RotaryDims > 0 && !c.RoPE) {
		return fmt.Errorf("induction: config %+v: RotaryDims must be even, at most the head size, and only with RoPE", c)
	}
	if c.Model.Vocab != c.Task.Vocab || c.Model.MaxLen != c.Task.Len || c.Batch < 1 || c.LearningRate <= 0 {
		return fmt.Errorf("induction: config %+v: want Model.Vocab = Task.Vocab, Model.MaxLen = Task.Len, Batch ≥ 1, LearningRate > 0", c)
	}
	return nil
}

// Run is a model being trained on the task.
type Run struct {
	Config  Config
	Ctx     *context.Context // the model's variables (and the optimiser's)
	Step    int              // training steps done
	Eval    Batch            // a fixed batch the snapshots measure
	backend backends.Backend
	trainer *train.Trainer
	forward *context.Exec
	rng     *rand.Rand
}

// NewRun creates the model's variables on backend (with decode.Decoder's initialisation, from
// c.Seed) and a fixed evaluation batch of 64 sequences. Call dotgrad.Install (mhalib/dotgrad)
// first for faster, leaner gradients.
func NewRun(backend backends.Backend, c Config) (*Run, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	ctx := context.New()
	if err := ctx.SetRNGStateFromSeed(int64(c.Seed)); err != nil {
		return nil, err
	}
	r, err := RunFrom(backend, ctx, c)
	if err != nil {
		return nil, err
	}
	if _, err := context.ExecOnce(backend, ctx, c.Logits, r.Eval.Tokens); err != nil {
		return nil, fmt.Errorf("induction: creating the model: %w", err)
	}
	return r, nil
}

// RunFrom continues from the model in ctx (e.g. from Load).
func RunFrom(backend backends.Backend, ctx *context.Context, c Config) (*Run, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	r := &Run{Config: c, Ctx: ctx, backend: backend, rng: rand.New(rand.NewPCG(c.Seed, 0x696e64))}
	r.Eval = c.Task.Sample(rand.New(rand.NewPCG(c.Seed, 0x6576616c)), 64)
	model := func(ctx *context.Context, _ any, inputs []*Node) []*Node {
		if c.DecaySteps > 0 { // sets the learning rate of this step (only in the training graph)
			cosineschedule.New(ctx, inputs[0].Graph(), dtypes.Float32).LearningRate(c.LearningRate).
				MinLearningRate(c.LearningRate / 10).WarmUpSteps(c.WarmupSteps).PeriodSteps(c.DecaySteps).Done()
		}
		return []*Node{c.Logits(ctx, inputs[0])}
	}
	r.trainer = train.NewTrainer(backend, ctx, model, CopyLoss,
		optimizers.Adam().LearningRate(c.LearningRate).WeightDecay(c.WeightDecay).Done(), nil, nil)
	var err error
	r.forward, err = context.NewExec(backend, ctx, c.Forward)
	return r, err
}

// Logits is the model of c: tokens [B, L] int32 → logits [B, L, V].
func (c Config) Logits(ctx *context.Context, tokens *Node) *Node {
	if c.RoPE {
		return ropeForward(ctx, c.Model, c.RotaryDims, tokens)[0]
	}
	return c.Model.Logits(ctx, tokens)
}

// Forward is the model of c with its attention weights: tokens [B, L] int32 → logits [B, L, V]
// followed by one [B, H, L, L] per layer.
func (c Config) Forward(ctx *context.Context, tokens *Node) []*Node {
	if c.RoPE {
		return ropeForward(ctx, c.Model, c.RotaryDims, tokens)
	}
	return ForwardWithWeights(ctx, c.Model, tokens)
}

// Train runs steps training steps on fresh batches and returns each step's loss.
func (r *Run) Train(steps int) ([]float64, error) {
	losses := make([]float64, 0, steps)
	for range steps {
		b := r.Config.Task.Sample(r.rng, r.Config.Batch)
		metrics, err := r.trainer.TrainStep(nil, []*tensors.Tensor{b.Tokens}, []*tensors.Tensor{b.Targets, b.Mask})
		if err != nil {
			return losses, fmt.Errorf("induction: step %d: %w", r.Step, err)
		}
		loss := tensors.ToScalar[float32](metrics[0])
		for _, m := range metrics {
			m.FinalizeAll()
		}
		losses = append(losses, float64(loss))
		r.Step++
	}
	return losses, nil
}

// Snapshot is what the model does on the evaluation batch at one step.
type Snapshot struct {
	Step      int
	Accuracy  float64           // CopyAccuracy on the evaluation batch
	PrevToken [][]float64       // [layer][head] PrevTokenScore
	Induction [][]float64       // [layer][head] InductionScore
	Weights   []*tensors.Tensor // [layer]: attention weights [B, H, L, L]
}

// Snapshot measures the model now on the evaluation batch.
func (r *Run) Snapshot() (Snapshot, error) { return r.Measure(r.Eval) }

// Measure measures the model now on batch b (of 64 sequences of the model's length, like the
// evaluation batch, so that the compiled graph is reused).
func (r *Run) Measure(b Batch) (Snapshot, error) {
	outs, err := r.forward.Exec(b.Tokens)
	if err != nil {
		return Snapshot{}, err
	}
	s := Snapshot{Step: r.Step, Accuracy: CopyAccuracy(outs[0], b), Weights: outs[1:]}
	for _, w := range outs[1:] {
		s.PrevToken = append(s.PrevToken, PrevTokenScore(w))
		s.Induction = append(s.Induction, InductionScore(w, b))
	}
	return s, nil
}

// Logits returns the model's logits [B, L, V] for tokens [B, L] (any B and L ≤ MaxLen).
func (r *Run) Logits(tokens *tensors.Tensor) (*tensors.Tensor, error) {
	return context.ExecOnce(r.backend, r.Ctx, r.Config.Logits, tokens)
}
