//go:build goexperiment.simd && amd64 && !go1.27 && !race

package fastgo

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// vectorSpill matches a move of a whole 256- or 512-bit register to or from the stack: the
// compiler's spill and reload. (128-bit moves are the horizontal sums' stores of four lanes.)
var vectorSpill = regexp.MustCompile(`vmov\S*\s+(%[yz]mm\d+,-?0x[0-9a-f]+\(%rsp\)|-?0x[0-9a-f]+\(%rsp\),%[yz]mm\d+)`)

// noSpillLoops are the vector loops that must keep every vector in a register: softmax's exp
// on both vector levels and the loops around it (see "exp's coefficients in memory",
// vec_simd.go, for what one spill cost), and the 16×16 register transpose of packing and
// Transpose (77 moves when it held all 16 rows at once; its buffer of 8 rows is addressed
// through a register, not as a spill slot).
var noSpillLoops = map[string]any{
	"expF32Vec": expF32Vec, "subExpSumF32Vec": subExpSumF32Vec, "expF32AVX2": expF32AVX2,
	"subExpSumF32AVX2": subExpSumF32AVX2, "maxF32Vec": maxF32Vec, "sumF32Vec": sumF32Vec,
	"binaryF32Vec": binaryF32Vec, "logisticF32Vec": logisticF32Vec, "transpose16x16F32": transpose16x16F32,
	"transpose8Rows": transpose8Rows, "erf8Pieces": erf8Pieces, "erf4PiecesAVX2": erf4PiecesAVX2,
}

// funcCode returns the machine code of the function fn, read from this process: from its entry
// to the first address that the runtime's function table places in another function. (go test
// links without a symbol table, so the bounds come from the runtime, not from the ELF file.)
func funcCode(fn any) []byte {
	code := reflect.ValueOf(fn).UnsafePointer()
	entry := uintptr(code)
	f := runtime.FuncForPC(entry)
	end := entry
	for end < entry+1<<16 {
		if g := runtime.FuncForPC(end + 1); g == nil || g.Entry() != f.Entry() {
			break
		}
		end++
	}
	return unsafe.Slice((*byte)(code), end+1-entry)
}

// TestVectorLoopsDoNotSpill disassembles noSpillLoops as this test binary runs them (binutils'
// objdump, which decodes AVX-512) and fails on any vector register moved to or from the stack.
// It fails on the tree before the coefficients moved to memory (expF32Vec 11 such moves,
// subExpSumF32Vec 127, subExpSumF32AVX2 300) and before transpose16x16F32 held 8 rows at most
// (77). Built with -race, the tails go through the stack on purpose (simd_part_race.go): the
// test is not built there.
func TestVectorLoopsDoNotSpill(t *testing.T) {
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		t.Skip("objdump (binutils) not found: cannot disassemble the vector loops")
	}
	dir := t.TempDir()
	for name, fn := range noSpillLoops {
		code := funcCode(fn)
		file := filepath.Join(dir, name+".bin")
		if err := os.WriteFile(file, code, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(objdump, "-D", "-b", "binary", "-m", "i386:x86-64", "--no-show-raw-insn", file).Output()
		if err != nil {
			t.Fatalf("%s: objdump: %v", name, err)
		}
		if !strings.Contains(string(out), "vmov") {
			t.Fatalf("%s (%d bytes): no vector move in its disassembly: not the vector loop?", name, len(code))
		}
		if moves := vectorSpill.FindAllString(string(out), -1); len(moves) > 0 {
			t.Errorf("%s (%d bytes of code): %d vector moves to or from the stack, e.g. %q", name, len(code), len(moves), moves[0])
		}
	}
}
