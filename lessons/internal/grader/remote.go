package grader

// The verdict outside the student's process. `mhalab lessons check` and `grade` build every
// grader twice:
//
//   - the judge: the grader with the ORIGINAL stub (never the student's code), run by the grading
//     process. It draws the run's seed, decides every check and prints go test's events. Where the
//     grader calls the student's code (Run, Compile, RunCtx, Call) the judge does not call it: it
//     sends the call's name and inputs to the worker and goes on with what comes back.
//   - the worker: the same grader with the student's files, run in a sandbox. It runs the same
//     TestLesson in lock-step, answers each request with the student's outputs and decides
//     nothing: what it prints, writes or how it exits can only make a check fail.
//
// The two talk over two pipes (fds 3 and 4) in frames of a 4-byte big-endian length and a JSON
// message. Every value from the worker is checked (dtype, shape, size) before the judge uses it.
// Without $MHALAB_GRADER_ROLE (plain `go test -tags lessons ./lessons/05_sdpa`) everything runs in
// one process, as a maintainer's test.

import (
	"bufio"
	crand "crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/mhalab/mhalab/lessons/graderenv"
)

// RoleEnv selects the process's role: "judge", "worker", or unset (one process).
const RoleEnv = graderenv.Role

// SeedEnv fixes the run's seed (replaying a run); otherwise the judge draws one.
const SeedEnv = graderenv.Seed

// SeedLine starts the line the judge prints with the run's seed (the runner reads it).
const SeedLine = graderenv.SeedLine

const (
	roleLocal = iota
	roleJudge
	roleWorker
)

// maxFrame bounds one message (a student's outputs): 256 MiB.
const maxFrame = 256 << 20

// maxFail bounds a failure message coming from the worker (a panic message is the student's text).
const maxFail = 4000

// defaultSeed is the seed of one-process runs: the same values every time, as before.
const defaultSeed = 0x6d68616c6162

type session struct {
	role int
	seed uint64
	in   *bufio.Reader // judge: responses; worker: requests
	out  io.Writer     // judge: requests; worker: responses
	seq  int
	gone string // why the other side is no longer there ("" while it is)
	mu   sync.Mutex
}

var (
	sessOnce sync.Once
	sess     *session
	sessErr  error
)

// hello is the judge's first message.
type hello struct {
	Version int
	Seed    uint64
}

// request is one call of the student's code the judge asks the worker to make.
type request struct {
	Seq    int
	Kind   string // "run", "compile", "exec", "runctx", "call"
	Test   string // t.Name(): the check the call belongs to
	What   string // "ScaledDotProductAttention(q [1 2 3 4], …)"
	Handle int    // exec: the Seq of the compile request
	Inputs []wireTensor
}

// response is the worker's answer: the outputs, a value (Call), or why the call failed.
type response struct {
	Seq     int
	Outputs []wireTensor    `json:",omitempty"`
	Value   json.RawMessage `json:",omitempty"`
	Fail    string          `json:",omitempty"`
}

// wireTensor is a tensor on the wire: dtype name, dimensions, raw little-endian bytes.
type wireTensor struct {
	DType string
	Dims  []int
	Data  []byte
	Nil   bool `json:",omitempty"`
}

// current returns the process's session, set up on first use: in a worker it reads the judge's
// hello; in a judge it sends it.
func current() (*session, error) {
	sessOnce.Do(func() {
		s := &session{seed: defaultSeed}
		if v := strings.TrimSpace(os.Getenv(SeedEnv)); v != "" {
			seed, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				sessErr = fmt.Errorf("$%s=%q: not a number", SeedEnv, v)
				return
			}
			s.seed = seed
		}
		switch os.Getenv(RoleEnv) {
		case "":
			s.role = roleLocal
		case "judge":
			s.role = roleJudge
			if os.Getenv(SeedEnv) == "" {
				var b [8]byte
				if _, err := crand.Read(b[:]); err != nil {
					sessErr = err
					return
				}
				s.seed = binary.LittleEndian.Uint64(b[:]) >> 1
			}
			s.in = bufio.NewReader(os.NewFile(3, "responses"))
			s.out = os.NewFile(4, "requests")
			fmt.Printf("%s%d\n", SeedLine, s.seed)
			if err := writeFrame(s.out, hello{Version: 1, Seed: s.seed}); err != nil {
				s.gone = "the program running your code did not start (" + err.Error() + ")"
			}
		case "worker":
			s.role = roleWorker
			s.in = bufio.NewReader(os.NewFile(3, "requests"))
			s.out = os.NewFile(4, "responses")
			var h hello
			if err := readFrame(s.in, &h); err != nil {
				sessErr = fmt.Errorf("worker: no hello from the judge: %w", err)
				return
			}
			s.seed = h.Seed
		default:
			sessErr = fmt.Errorf("$%s=%q: use judge or worker", RoleEnv, os.Getenv(RoleEnv))
		}
		sess = s
	})
	return sess, sessErr
}

// mustSession is current for the graders' helpers: a broken set-up ends the test binary, which
// the runner reports as an error (never as a pass).
func mustSession() *session {
	s, err := current()
	if err != nil {
		fmt.Fprintf(os.Stderr, "grader: %v\n", err)
		os.Exit(3)
	}
	return s
}

// RunSeed is the seed of this run: drawn by the judge, shared with the worker; fixed in one process.
func RunSeed() uint64 { return mustSession().seed }

func writeFrame(w io.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(data) > maxFrame {
		return fmt.Errorf("message of %d bytes is larger than the limit of %d", len(data), maxFrame)
	}
	buf := make([]byte, 4+len(data))
	binary.BigEndian.PutUint32(buf, uint32(len(data)))
	copy(buf[4:], data)
	_, err = w.Write(buf)
	return err
}

func readFrame(r io.Reader, v any) error {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(head[:])
	if n > maxFrame {
		return fmt.Errorf("a message of %d bytes, larger than the limit of %d", n, maxFrame)
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(r, data); err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// toWire converts a tensor for sending.
func toWire(t *tensors.Tensor) (wireTensor, error) {
	if t == nil {
		return wireTensor{Nil: true}, nil
	}
	w := wireTensor{DType: t.DType().String(), Dims: append([]int{}, t.Shape().Dimensions...)}
	err := t.ConstBytes(func(data []byte) { w.Data = append([]byte{}, data...) })
	return w, err
}

// fromWire rebuilds a tensor the other side sent, refusing anything malformed.
func fromWire(w wireTensor) (*tensors.Tensor, error) {
	if w.Nil {
		return nil, nil
	}
	dt, err := dtypes.DTypeString(w.DType)
	if err != nil || dt == dtypes.InvalidDType || dt.Size() <= 0 {
		return nil, fmt.Errorf("a tensor of unknown dtype %q", w.DType)
	}
	if len(w.Dims) > 16 {
		return nil, fmt.Errorf("a tensor of rank %d", len(w.Dims))
	}
	n := 1
	for _, d := range w.Dims {
		if d < 0 || d > maxFrame || (d > 0 && n > maxFrame/d) {
			return nil, fmt.Errorf("a tensor of dimensions %v", w.Dims)
		}
		n *= d
	}
	if n*dt.Size() != len(w.Data) {
		return nil, fmt.Errorf("a %s tensor %v with %d bytes of data (expected %d)", w.DType, w.Dims, len(w.Data), n*dt.Size())
	}
	t := tensors.FromShape(shapes.Make(dt, w.Dims...))
	err = t.MutableBytes(func(data []byte) { copy(data, w.Data) })
	return t, err
}

func toWireAll(ts []*tensors.Tensor) ([]wireTensor, error) {
	out := make([]wireTensor, len(ts))
	for i, t := range ts {
		w, err := toWire(t)
		if err != nil {
			return nil, err
		}
		out[i] = w
	}
	return out, nil
}

func fromWireAll(ws []wireTensor) ([]*tensors.Tensor, error) {
	out := make([]*tensors.Tensor, len(ws))
	for i, w := range ws {
		t, err := fromWire(w)
		if err != nil {
			return nil, fmt.Errorf("result %d: %w", i+1, err)
		}
		out[i] = t
	}
	return out, nil
}

// asTensors converts Run's inputs (*tensors.Tensor or Go values) to tensors.
func asTensors(inputs []any) ([]*tensors.Tensor, error) {
	out := make([]*tensors.Tensor, len(inputs))
	for i, x := range inputs {
		switch v := x.(type) {
		case *tensors.Tensor:
			out[i] = v
		default:
			t, err := fromAnyValue(x)
			if err != nil {
				return nil, fmt.Errorf("input %d: %w", i+1, err)
			}
			out[i] = t
		}
	}
	return out, nil
}

func fromAnyValue(x any) (t *tensors.Tensor, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return tensors.FromAnyValue(x), nil
}

// ask sends a request from the judge and waits for the worker's response. A worker that is gone
// (it exited, crashed, was stopped at a limit, or answered nonsense) gives an error; the runner
// says why from outside.
func (s *session) ask(req request) (response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone != "" {
		return response{}, errors.New(s.gone)
	}
	s.seq++
	req.Seq = s.seq
	if err := writeFrame(s.out, req); err != nil {
		s.gone = "the program running your code stopped before this check"
		return response{}, errors.New(s.gone)
	}
	var resp response
	if err := readFrame(s.in, &resp); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			s.gone = "the program running your code stopped during " + req.What
		} else {
			s.gone = "the program running your code answered with something that is not a result (" + shorten(err.Error(), 200) + ")"
		}
		return response{}, errors.New(s.gone)
	}
	if resp.Seq != req.Seq {
		s.gone = fmt.Sprintf("the program running your code answered out of turn (message %d for request %d)", resp.Seq, req.Seq)
		return response{}, errors.New(s.gone)
	}
	if len(resp.Fail) > maxFail {
		resp.Fail = resp.Fail[:maxFail] + " …"
	}
	return resp, nil
}

// next reads the judge's next request in a worker and checks that it is the call this worker
// is at (same kind, check and description): both run the same grader with the same seed.
func (s *session) next(kind, test, what string) (request, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone != "" {
		return request{}, errors.New(s.gone)
	}
	var req request
	if err := readFrame(s.in, &req); err != nil {
		s.gone = "the judge is gone: " + err.Error()
		if errors.Is(err, io.EOF) {
			os.Exit(0) // the judge finished: nothing more to answer
		}
		return request{}, errors.New(s.gone)
	}
	s.seq = req.Seq
	if req.Kind != kind || req.Test != test || req.What != what {
		s.gone = fmt.Sprintf("lost track of the grader: it asked for %s %q in %s, this program is at %s %q in %s", req.Kind, req.What, req.Test, kind, what, test)
		_ = writeFrame(s.out, response{Seq: req.Seq, Fail: "the grader lost track of your program (" + s.gone + ")"})
		return request{}, errors.New(s.gone)
	}
	return req, nil
}

// answer sends the worker's response to the current request.
func (s *session) answer(resp response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	resp.Seq = s.seq
	if err := writeFrame(s.out, resp); err != nil {
		// The outputs cannot be sent (too large, or the judge is gone): say so instead.
		_ = writeFrame(s.out, response{Seq: s.seq, Fail: "your results could not be sent to the grader: " + shorten(err.Error(), 200)})
	}
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// remoteRun is Run, RunCtx and a compiled graph's call in a judge or a worker. local computes the
// outputs in this process (the worker's side); count is the number of results the grader's
// build function returns (-1 when unknown).
func (l Lesson) remote(t testing.TB, s *session, kind, what string, handle int, inputs []any, count int, local func(in []*tensors.Tensor) ([]*tensors.Tensor, string)) []*tensors.Tensor {
	t.Helper()
	in, err := asTensors(inputs)
	if err != nil {
		t.Fatalf("grader: %s: %v", what, err) // the grader's own inputs: a bug of the grader
	}
	switch s.role {
	case roleJudge:
		wire, err := toWireAll(in)
		if err != nil {
			t.Fatalf("grader: %s: %v", what, err)
		}
		resp, err := s.ask(request{Kind: kind, Test: t.Name(), What: what, Handle: handle, Inputs: wire})
		if err != nil {
			l.Fatalf(t, "%s: not run: %v", what, err)
		}
		if resp.Fail != "" {
			l.Fatalf(t, "%s", resp.Fail)
		}
		outs, err := fromWireAll(resp.Outputs)
		if err != nil {
			l.Fatalf(t, "%s gave a result the grader cannot read: %v", what, err)
		}
		if count >= 0 && len(outs) != count {
			l.Fatalf(t, "%s gave %d results, expected %d", what, len(outs), count)
		}
		for i, o := range outs {
			if o == nil {
				l.Fatalf(t, "%s: result %d is missing", what, i+1)
			}
		}
		return outs
	case roleWorker:
		req, err := s.next(kind, t.Name(), what)
		if err != nil {
			l.Fatalf(t, "%s: %v", what, err)
		}
		// The judge's inputs are the ones that count (they are equal to this process's own when
		// both follow the grader).
		if got, err := fromWireAll(req.Inputs); err == nil {
			in = got
		} else {
			s.answer(response{Fail: "grader: " + err.Error()})
			l.Fatalf(t, "%s: %v", what, err)
		}
		outs, fail := local(in)
		if fail != "" {
			s.answer(response{Fail: fail})
			l.Fatalf(t, "%s", fail)
		}
		wire, err := toWireAll(outs)
		if err != nil {
			fail = fmt.Sprintf("%s: the results cannot be read: %v", what, err)
			s.answer(response{Fail: fail})
			l.Fatalf(t, "%s", fail)
		}
		s.answer(response{Outputs: wire})
		return outs
	default:
		outs, fail := local(in)
		if fail != "" {
			l.Fatalf(t, "%s", fail)
		}
		return outs
	}
}
