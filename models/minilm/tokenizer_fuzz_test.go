package minilm

import (
	"testing"
	"unicode/utf8"
)

// FuzzTokenizerEncode: any valid UTF-8 text encodes without error (the library's panics would
// come back as errors) to [CLS] … [SEP] with one token per id; invalid UTF-8 is ErrInvalidUTF8.
func FuzzTokenizerEncode(f *testing.F) {
	for _, s := range []string{"", " ", "The cat sat.", "café 東京 🙂", "\u202eRTL", "\ufeffBOM", "a\x00b", "[SEP] [CLS]", "\xff"} {
		f.Add(s)
	}
	dir := modelDir(f)
	tk, err := LoadTokenizer(dir + "/" + FileTokenizer().Name)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		enc, err := tk.Encode(s)
		if !utf8.ValidString(s) {
			if err != ErrInvalidUTF8 {
				t.Fatalf("%q: error %v, want ErrInvalidUTF8", s, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		n := enc.Len()
		if n < 2 || len(enc.Tokens) != n || enc.IDs[0] != tk.clsID || enc.IDs[n-1] != tk.sepID {
			t.Fatalf("%q: ids %v tokens %q", s, enc.IDs, enc.Tokens)
		}
	})
}
