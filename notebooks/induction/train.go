package induction

import (
	"fmt"
	"math/rand/v2"

	"github.com/gomlx/gomlx/backends"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/train"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"
	"github.com/mhalab/mhalab/mhalib"
)

// Config is a training run: the task, the model, and the optimiser's settings.
type Config struct {
	Task         Task
	Model        mhalib.Decoder // Vocab = Task.Vocab, MaxLen = Task.Len
	Batch        int            // sequences per step
	LearningRate float64        // Adam's
	Seed         uint64         // initial weights (drawn by the backend) and the sequences
}

// Repeat is notebook 10's run: a random prefix of 12 distinct tokens (vocabulary 32) followed
// by its copy, 24 tokens in all; width 64, 4 heads, 2 layers; Adam at 3e-3, batches of 16.
var Repeat = Config{
	Task:         Task{Vocab: 32, Len: 24, MinPrefix: 12, MaxPrefix: 12},
	Model:        mhalib.Decoder{Vocab: 32, Embed: 64, Heads: 4, Layers: 2, MaxLen: 24},
	Batch:        16,
	LearningRate: 3e-3,
	Seed:         1,
}

// Small is Repeat with prefixes of 5–12 tokens at random offsets: the copy's distance varies,
// so positions alone do not tell where to look.
var Small = Config{
	Task:         Task{Vocab: 32, Len: 24, MinPrefix: 5, MaxPrefix: 12},
	Model:        Repeat.Model,
	Batch:        32,
	LearningRate: 3e-3,
	Seed:         1,
}

// Check reports an inconsistent configuration.
func (c Config) Check() error {
	if err := c.Task.Check(); err != nil {
		return err
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

// NewRun creates the model's variables on backend (with mhalib.Decoder's initialisation, from
// c.Seed) and a fixed evaluation batch of 64 sequences. Call mhalib.InstallDotGeneralGradient
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
	if _, err := context.ExecOnce(backend, ctx, c.Model.Logits, r.Eval.Tokens); err != nil {
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
		return []*Node{c.Model.Logits(ctx, inputs[0])}
	}
	r.trainer = train.NewTrainer(backend, ctx, model, CopyLoss,
		optimizers.Adam().LearningRate(c.LearningRate).Done(), nil, nil)
	var err error
	r.forward, err = context.NewExec(backend, ctx, func(ctx *context.Context, tokens *Node) []*Node {
		return ForwardWithWeights(ctx, c.Model, tokens)
	})
	return r, err
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
	return context.ExecOnce(r.backend, r.Ctx, r.Config.Model.Logits, tokens)
}
