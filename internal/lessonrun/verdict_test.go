package lessonrun

// The verdict is decided outside the student's process (lessons/internal/grader/remote.go): a
// submission that prints fake test events, writes them on every file descriptor, exits 0 from
// init or from the graded function, or overwrites the grader's package-level variables gains
// nothing. Run against the grader before the judge/worker split (commit 9b28554), the first two
// attacks passed exercise 5 with the stub's wrong code, the third passed 5 of its 6 checks (one
// run: all of them in another), and the fourth passed exercise 11 when its goroutine won the race
// (once of two runs); now the first three pass nothing and the fourth does not compile (the
// grader's variable is a local).

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mhalab/mhalab/lessons"
)

// fakeEvents prints, for every check of exercise 5, what go test -json and its -test.v=test2json
// framing print for a passing test, and a passing package.
const fakeEvents = `
var checkNames = []string{"shapes", "weights_rows_sum_to_1", "scale_is_1_over_sqrt_dk",
	"values_match_the_float64_reference", "large_logits_give_no_NaN", "matches_PyTorch_per-head_weights"}

func fakeLines() string {
	pkg := "github.com/mhalab/mhalab/lessons/05_sdpa"
	var b strings.Builder
	b.WriteString("\x16=== RUN   TestLesson\n")
	for _, c := range checkNames {
		fmt.Fprintf(&b, "\x16=== RUN   TestLesson/%s\n\x16--- PASS: TestLesson/%s (0.00s)\n", c, c)
		fmt.Fprintf(&b, "=== RUN   TestLesson/%s\n--- PASS: TestLesson/%s (0.00s)\n", c, c)
		fmt.Fprintf(&b, "{\"Action\":\"run\",\"Package\":%q,\"Test\":\"TestLesson/%s\"}\n", pkg, c)
		fmt.Fprintf(&b, "{\"Action\":\"pass\",\"Package\":%q,\"Test\":\"TestLesson/%s\"}\n", pkg, c)
	}
	b.WriteString("\x16--- PASS: TestLesson (0.00s)\n\x16PASS\nPASS\n")
	fmt.Fprintf(&b, "{\"Action\":\"pass\",\"Package\":%q,\"Test\":\"TestLesson\"}\n", pkg)
	fmt.Fprintf(&b, "{\"Action\":\"pass\",\"Package\":%q}\n", pkg)
	fmt.Fprintf(&b, "ok  \t%s\t0.01s\n", pkg)
	return b.String()
}
`

const sdpaHead = `package sdpa

import (
	"fmt"
	"os"
	"strings"
	"syscall"

	. "github.com/gomlx/gomlx/pkg/core/graph"
)

var _ = syscall.Write
`

// The attacks on exercise 5: the graded function itself is the stub's (wrong).
var verdictAttacks = []struct{ name, src string }{
	{"fake events from init, then exit 0", sdpaHead + fakeEvents + `
func init() {
	fmt.Print(fakeLines())
	os.Exit(0)
}

func ScaledDotProductAttention(q, k, v *Node) (out, weights *Node) { return v, q }
`},
	{"fake events on every fd 1-63, then exit 0", sdpaHead + fakeEvents + `
func init() {
	lines := []byte(fakeLines())
	for fd := 1; fd < 64; fd++ {
		syscall.Write(fd, lines)
	}
	os.Exit(0)
}

func ScaledDotProductAttention(q, k, v *Node) (out, weights *Node) { return v, q }
`},
	{"fake events from the graded function, then exit 0", sdpaHead + fakeEvents + `
func ScaledDotProductAttention(q, k, v *Node) (out, weights *Node) {
	lines := []byte(fakeLines())
	for fd := 1; fd < 64; fd++ {
		syscall.Write(fd, lines)
	}
	os.Exit(0)
	return v, q
}
`},
}

// repeatingGQA solves exercise 11 correctly but repeats k and v to the query heads (what its
// check "k and v are not repeated" refuses), and clears the grader's variable that recorded it,
// from a goroutine started in init: when that variable was package-level, the check passed.
const repeatingGQA = `package gqa

import (
	"math"
	"runtime"

	. "github.com/gomlx/gomlx/pkg/core/graph"
)

func init() {
	go func() {
		for {
			repeated = ""
			runtime.Gosched()
		}
	}()
}

func GroupedQueryAttention(q, k, v *Node) (out, weights *Node) {
	B, Hq, Lq, dk := q.Shape().Dim(0), q.Shape().Dim(1), q.Shape().Dim(2), q.Shape().Dim(3)
	Hkv, Lk, dv := k.Shape().Dim(1), k.Shape().Dim(2), v.Shape().Dim(3)
	G := Hq / Hkv
	kr := Reshape(BroadcastToDims(Reshape(k, B, Hkv, 1, Lk, dk), B, Hkv, G, Lk, dk), B, Hq, Lk, dk)
	vr := Reshape(BroadcastToDims(Reshape(v, B, Hkv, 1, Lk, dv), B, Hkv, G, Lk, dv), B, Hq, Lk, dv)
	w := Softmax(MulScalar(Einsum("bhqd,bhkd->bhqk", q, kr), 1/math.Sqrt(float64(dk))), -1)
	_ = Lq
	return Einsum("bhqk,bhkd->bhqd", w, vr), w
}
`

// gradeOne grades one student folder holding file (relative to lessons/) on exercise e and
// returns the CSV row and the report.
func gradeOne(t *testing.T, root, name string, e lessons.Exercise, src string) (row map[string]string, report string) {
	t.Helper()
	class := t.TempDir()
	student := filepath.Join(class, name)
	if err := writeTestFile(filepath.Join(student, e.Path(e.File)), src); err != nil {
		t.Fatal(err)
	}
	csvPath := filepath.Join(t.TempDir(), "grades.csv")
	code, out, stderr := cli(root, "grade", student, "--exercises", e.Dir[:2], "-o", csvPath, "--timeout", "60s")
	if code != 0 {
		t.Fatalf("grade %s: exit %d\n%s%s", name, code, out, stderr)
	}
	data, err := os.ReadFile(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	records, err := csv.NewReader(strings.NewReader(string(data))).ReadAll()
	if err != nil || len(records) != 2 {
		t.Fatalf("grades.csv: %v\n%s", err, data)
	}
	row = map[string]string{}
	for i, h := range records[0] {
		row[h] = records[1][i]
	}
	return row, out
}

func TestVerdictAttacksFail(t *testing.T) {
	root := copyRepo(t)
	ex5, _ := lessons.Lookup(5)
	for _, a := range verdictAttacks {
		t.Run(a.name, func(t *testing.T) {
			row, report := gradeOne(t, root, "mallory", ex5, a.src)
			t.Logf("%s: %s (%s)", a.name, row[ex5.Dir], row["notes"])
			if row[ex5.Dir] != "fail" || row["total"] != "0" {
				t.Errorf("%s: graded %q, total %s, want fail and 0:\n%s", a.name, row[ex5.Dir], row["total"], report)
			}
			// Not a single check gained: the stub itself passes none of exercise 5's.
			if strings.Contains(row["notes"], "checks pass") && !strings.Contains(row["notes"], " 0/6 checks pass") {
				t.Errorf("%s: checks passed: %s", a.name, row["notes"])
			}
		})
	}
	t.Run("grader variable overwritten from the student's file", func(t *testing.T) {
		ex11, _ := lessons.Lookup(11)
		row, report := gradeOne(t, root, "mallory", ex11, repeatingGQA)
		t.Logf("11: %s (%s)", row[ex11.Dir], row["notes"])
		if row[ex11.Dir] != "fail" {
			t.Errorf("exercise 11 with a goroutine clearing the grader's variable: %q, want fail:\n%s", row[ex11.Dir], report)
		}
	})
}
