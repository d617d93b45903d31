// Package badinputs holds the bad command lines mhalab is tried with and the table of what each
// gets, cmd/mhalab/BAD_INPUTS.md: TestBadInputs (cmd/mhalab) runs every case in-process and wants
// the file to equal Doc of its outcomes; go generate ./cmd/mhalab (./gen: the built binary run on
// every case) rewrites it.
package badinputs

import (
	"fmt"
	"slices"
	"strings"
)

// Case is a bad command line: it must exit with Code and print Want (a substring) on the first
// line of stderr.
type Case struct {
	Args []string
	Code int
	Want string
}

// File is the table's file name, in cmd/mhalab.
const File = "BAD_INPUTS.md"

// Forward fixtures and bad files, relative to cmd/mhalab (where the tests run).
const (
	FixtureWeights = "../../parity/testdata/mha_self.weights.safetensors"
	FixtureInputs  = "../../parity/testdata/mha_self.inputs.safetensors"
	GarbageFile    = "testdata/bad/garbage.safetensors"
	GarbageLink    = "testdata/bad/link-to-garbage.safetensors" // a symbolic link to GarbageFile
	HugeHeader     = "testdata/bad/huge_header.safetensors"
	LessonsStudent = "testdata/student" // a student's copy of lessons/ with one exercise folder
)

// Cases returns the bad command lines tried, a fresh slice. Each must exit with code and print want (a
// substring) on the first line of stderr: one line for a bad value (exit 1), that line and a
// pointer to -h for bad usage (exit 2); never a panic or a stack.
func Cases() []Case {
	out := make([]Case, len(cases))
	for i, c := range cases {
		out[i] = Case{slices.Clone(c.Args), c.Code, c.Want}
	}
	return out
}

var cases = []Case{
	{[]string{"nope"}, 2, `unknown command "nope"`},
	{[]string{"demo", "--batch", "3000000000", "--seq", "3000000000"}, 1, "the forward pass would need 2.0 QiB of float32 tensors"},
	{[]string{"demo", "--seq", "100000"}, 1, "the forward pass would need 28 TiB"},
	{[]string{"demo", "--heads", "0"}, 1, "--heads 0: want a positive number"},
	{[]string{"demo", "--dmodel", "10", "--heads", "3"}, 1, "--heads 3 does not divide --dmodel 10"},
	{[]string{"demo", "--batch", "-5"}, 1, "--batch -5: want a positive number"},
	{[]string{"demo", "--runs", "0"}, 1, "--runs 0: want a positive number"},
	{[]string{"demo", "--max-memory", "0"}, 1, "--max-memory 0: want a positive size"},
	{[]string{"demo", "--runs", "x"}, 2, `invalid value "x" for flag -runs`},
	{[]string{"demo", "--seq", "99999999999999999999"}, 2, `invalid value "99999999999999999999" for flag -seq`},
	{[]string{"demo", "--max-memory", "lots"}, 2, `invalid value "lots" for flag -max-memory`},
	{[]string{"demo", "--backend", "tpu"}, 2, `unknown backend "tpu"`},
	{[]string{"demo", "extra"}, 2, `unexpected argument "extra"`},
	{[]string{"hlo", "--batch", "3000000000", "--seq", "3000000000"}, 1, "compiling the graph would need 999 EiB"},
	{[]string{"hlo", "--batch", "1", "--seq", "2000000000", "--dmodel", "1", "--heads", "1", "--max-memory", "16GiB"}, 1, "more than XLA can address"},
	{[]string{"hlo", "--heads", "-1"}, 1, "--heads -1: want a positive number"},
	{[]string{"hlo", "--dmodel", "30", "--heads", "4"}, 1, "--heads 4 does not divide --dmodel 30"},
	{[]string{"hlo", "--stage", "llvm"}, 2, `--stage "llvm": want stablehlo, hlo or optimized`},
	{[]string{"hlo", "--backend", "go"}, 2, "the pure-Go backend does not compile to HLO"},
	{[]string{"hlo", "--devices", "3", "--stage", "optimized"}, 2, "--devices 3 does not divide --heads 4"},
	{[]string{"hlo", "--devices", "2", "--stage", "stablehlo"}, 2, "use --stage hlo or --stage optimized"},
	{[]string{"hlo", "--devices", "0"}, 2, "--devices 0: want 1 to 64"},
	{[]string{"forward"}, 2, "--weights, --inputs and --out are required"},
	{[]string{"forward", "--weights", FixtureWeights, "--inputs", FixtureInputs, "--out", "out.safetensors"}, 2, "--num-heads is required"},
	{[]string{"forward", "--weights", FixtureWeights, "--inputs", FixtureInputs, "--out", "out.safetensors", "--num-heads", "0"}, 1, "--num-heads 0: want a positive number of heads"},
	{[]string{"forward", "--weights", FixtureWeights, "--inputs", FixtureInputs, "--out", "out.safetensors", "--num-heads", "3"}, 1, "does not divide embed_dim"},
	{[]string{"forward", "--weights", "/no/such/w.safetensors", "--inputs", FixtureInputs, "--out", "out.safetensors", "--num-heads", "2"}, 1, "no such file"},
	{[]string{"forward", "--weights", GarbageFile, "--inputs", FixtureInputs, "--out", "out.safetensors", "--num-heads", "2"}, 1, "--weights: torchio: "},
	{[]string{"forward", "--weights", FixtureWeights, "--inputs", HugeHeader, "--out", "out.safetensors", "--num-heads", "2"}, 1, "--inputs: torchio: "},
	{[]string{"forward", "--weights", FixtureWeights, "--inputs", FixtureWeights, "--out", "out.safetensors", "--num-heads", "2"}, 1, "unknown tensors"},
	{[]string{"forward", "--weights", FixtureWeights, "--inputs", FixtureInputs, "--out", "out.safetensors", "--num-heads", "2", "--max-memory", "1KiB"}, 1, "more than --max-memory 1.0 KiB"},
	// An output that is one of the inputs is refused before anything is read (the files here are
	// bad, so that a regression cannot write over a fixture: reading them fails first).
	{[]string{"forward", "--weights", GarbageFile, "--inputs", FixtureInputs, "--out", GarbageFile, "--num-heads", "2"}, 1,
		"--out " + GarbageFile + " is the same file as --weights " + GarbageFile + ": refusing to overwrite an input"},
	{[]string{"forward", "--weights", GarbageFile, "--inputs", FixtureInputs, "--out", GarbageLink, "--num-heads", "2"}, 1,
		"--out " + GarbageLink + " is the same file as --weights " + GarbageFile},
	{[]string{"forward", "--weights", FixtureWeights, "--inputs", FixtureInputs, "--out", "testdata", "--num-heads", "2"}, 1, "--out testdata is a folder: give a file name"},
	{[]string{"forward", "--weights", FixtureWeights, "--inputs", FixtureInputs, "--out", "/no/such/out.safetensors", "--num-heads", "2"}, 1,
		"--out /no/such/out.safetensors: its folder /no/such does not exist"},
	{[]string{"bench", "--suites", "nope"}, 2, `--suites: unknown suite "nope"`},
	{[]string{"bench", "--threads", "0"}, 1, "--threads 0: want at least 1"},
	{[]string{"bench", "--child", "{"}, 1, "--child: bench: memory measurement"},
	{[]string{"bench", "--devices", "-1"}, 2, "--devices -1: want 1 to 64"},
	{[]string{"bench", "--groups", "gpt"}, 2, `--groups: unknown group "gpt" (valid: seed003, long, llm)`},
	{[]string{"bench", "--compare", "/no/such/bench.json"}, 1, "--compare: open /no/such/bench.json: no such file or directory"},
	{[]string{"backends", "--bogus"}, 2, "flag provided but not defined: -bogus"},
	{[]string{"embed"}, 2, "no sentence given"},
	{[]string{"embed", "--backend", "tpu", "x"}, 2, `unknown backend "tpu"`},
	{[]string{"attention", "one", "two"}, 2, "want exactly one SENTENCE"},
	{[]string{"generate"}, 2, "no PROMPT"},
	{[]string{"generate", "a", "b"}, 2, "one PROMPT expected, got 2 arguments"},
	{[]string{"generate", ""}, 1, "empty prompt"},
	{[]string{"generate", "--temperature", "1", "--top-p", "1.5", "x"}, 1, "--top-p 1.5: want a number in (0, 1]"},
	{[]string{"generate", "--temperature", "0.7", "--top-k", "-1", "x"}, 1, "--top-k -1: want ≥ 0"},
	{[]string{"generate", "--greedy", "--temperature", "1", "x"}, 1, "--greedy and --temperature exclude each other"},
	{[]string{"generate", "--max-new-tokens", "0", "x"}, 1, "--max-new-tokens 0: want ≥ 1"},
	{[]string{"generate", "--temperature", "0", "x"}, 1, "--temperature 0: want T > 0 (greedy decoding is the default"},
	{[]string{"generate", "caf\xe9"}, 1, "PROMPT: invalid UTF-8 at byte offset 3 (0xe9)"},
	{[]string{"generate", "--model", "/no/such/model.gguf", "x"}, 1, "no such file"},
	{[]string{"generate", "--model", GarbageFile, "x"}, 1, "not a GGUF file"},
	{[]string{"generate", "--backend", "tpu", "x"}, 2, `unknown backend "tpu"`},
	{[]string{"explore", "x"}, 2, `unexpected argument "x"`},
	{[]string{"explore", "--backend", "tpu"}, 2, `unknown backend "tpu"`},
	{[]string{"explore", "--port", "70000"}, 2, "--port 70000: want 0 (a free port) to 65535"},
	{[]string{"explore", "--max-tokens", "2"}, 1, "max tokens 2: want ≥ 4"},
	{[]string{"explore", "--model", "/no/such/model.gguf"}, 1, "/no/such/model.gguf: no such file or folder"},
	{[]string{"explore", "--model", GarbageFile}, 1, "not a GGUF file"},
	{[]string{"chat", "--temperature", "1", "--top-p", "0", "x"}, 2, `unexpected argument "x"`},
	{[]string{"chat", "--temperature", "1", "--top-p", "0"}, 1, "--top-p 0: want a number in (0, 1]"},
	{[]string{"chat", "--temperature", "0"}, 1, "--temperature 0: want T > 0"},
	{[]string{"lessons", "grade", "/no/such/dir", "--root", "../.."}, 1, "/no/such/dir does not exist"},
	{[]string{"lessons", "hint", "99", "--root", "../.."}, 2, `no exercise "99"`},
	{[]string{"lessons", "grade", "--root", "../..", "-o", LessonsStudent + "/01_linear/linear.go", LessonsStudent}, 1, "is inside the student folder " + LessonsStudent},
	{[]string{"lessons", "grade", "--root", "../..", "-o", GarbageFile, LessonsStudent}, 1, "-o " + GarbageFile + " exists and is not a CSV of mhalab lessons grade: refusing to overwrite it"},
	{[]string{"lessons", "grade", "--root", "../..", "--gradescope", "results.json", LessonsStudent, LessonsStudent}, 2, "--gradescope grades one submission: give exactly one folder (got 2)"},
	{[]string{"lessons", "grade", "--root", "../..", "--gradescope", "results.json", "--scoring", "half", LessonsStudent}, 2, `--scoring "half": want exercise`},
	{[]string{"lessons", "gradescope", "--root", "../..", "extra"}, 2, "lessons gradescope: wrong number of arguments"},
	{[]string{"lessons", "gradescope", "--root", "../..", "-o", GarbageFile}, 1, "is not an autograder zip of mhalab lessons gradescope"},
	{[]string{"lessons", "check", "1", "--root", "../..", "--memory", "1KiB"}, 1, "--memory 1.0 KiB: too small"},
	{[]string{"lessons", "check", "1", "--root", "../..", "--memory", "lots"}, 2, `invalid value "lots" for flag -memory`},
	{[]string{"lessons", "check", "1", "--root", "../..", "--seed", "-3"}, 2, `invalid value "-3" for flag -seed`},
	{[]string{"sdpa", "--inputs", FixtureInputs}, 2, "--inputs and --out are required"},
	{[]string{"sdpa", "--inputs", FixtureInputs, "--out", "out.safetensors", "--rope", "spiral"}, 2, `--rope "spiral": want half or interleaved`},
	{[]string{"sdpa", "--inputs", FixtureInputs, "--out", "out.safetensors", "--window-left", "-1"}, 1, "--window-left -1: a window side must be >= 0"},
	{[]string{"sdpa", "--inputs", FixtureInputs, "--out", "out.safetensors"}, 1, "query shape [2 4 8]: want rank 4 [B, H, L, E]"},
	{[]string{"sdpa", "--inputs", GarbageFile, "--out", GarbageLink}, 1, "--out " + GarbageLink + " is the same file as --inputs " + GarbageFile},
	{[]string{"bench", "--compare", GarbageFile, "--json", GarbageFile}, 1, "--json " + GarbageFile + " is the same file as --compare " + GarbageFile},
}

// Lines returns the lines of stderr that are not information (the backend line).
func Lines(stderr string) []string {
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(stderr, "\n"), "\n") {
		if l != "" && !strings.HasPrefix(l, "mhalab: backend ") {
			lines = append(lines, l)
		}
	}
	return lines
}

// Row is the table's line for a case's outcome: its command line, exit status and the first
// line of Lines(stderr); "" when stderr says nothing.
func Row(args []string, code int, stderr string) string {
	lines := Lines(stderr)
	if len(lines) == 0 {
		return ""
	}
	return fmt.Sprintf("| `%s` | %d | `%s` |\n", "mhalab "+strings.Join(args, " "), code, strings.ReplaceAll(lines[0], "|", `\|`))
}

// Doc is the file for the rows of every case, in order.
func Doc(rows []string) string { return header + strings.Join(rows, "") + footer }

const header = `# Bad input and what mhalab answers

Generated by ` + "`go generate ./cmd/mhalab`" + ` (cmd/mhalab/internal/badinputs/gen) from the cases of
cmd/mhalab/internal/badinputs; cmd/mhalab/badinput_test.go checks each one (exit status, one line,
no stack) and fails when this file is out of date. The forward files are the committed fixtures of parity/testdata and
two bad files in cmd/mhalab/testdata/bad. ` + "`mhalab forward`" + ` is also fuzzed: FuzzForward mutates the
bytes of the weights and inputs files and the flags, FuzzForwardShapes writes well-formed inputs of
fuzzed ranks, sizes (0 … 9) and dtypes; their corpora are kept in cmd/mhalab/testdata/fuzz and run
by every ` + "`go test`" + `.

Exit status: 0 success; 1 the command failed or a value cannot be run (a size that is zero,
negative or needs more than ` + "`--max-memory`" + `, default 8 GiB; heads that do not divide d_model; a
missing or malformed file); 2 bad usage (unknown command or flag, a value of the wrong type or not
one of the listed choices, a missing required flag, an extra argument), with a second line pointing
to ` + "`-h`" + `. Sizes are checked before anything is allocated. A panic (a bug) is caught and reported on
one line as an internal error, exit 1; ` + "`MHALAB_DEBUG=1`" + ` adds its stack.

No command destroys a file: an output that is one of the command's inputs (the same path spelled
otherwise, a symbolic or a hard link: compared with os.SameFile), a folder, or in a folder that does
not exist is refused before anything is read; every file is written to a temporary file in its
folder and renamed (internal/atomicfile), so a failure or Ctrl-C leaves the old file whole. Text
(PROMPT, SENTENCE, chat's lines on stdin) must be UTF-8. ` + "`generate`" + ` and ` + "`chat`" + ` refuse what cannot
fit the model's context (read from its file), a huge prompt or message by its length in bytes
before tokenizing; those cases need the model and are tested in generate_test.go. NaN or Inf in
the outputs of ` + "`forward`" + ` and ` + "`sdpa`" + ` (NaN inputs, or rows with every key masked, as in PyTorch) are
written, exit 0, with a warning line on stderr (count, first index, inputs that hold any).

| command | exit | stderr (first line) |
|---|---:|---|
`

const footer = ""
