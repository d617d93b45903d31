package textinput

import "testing"

func TestCheckUTF8(t *testing.T) {
	for _, c := range []struct{ s, want string }{
		{"", ""},
		{"plain", ""},
		{"é 日本 🙂 \uFFFD", ""}, // U+FFFD written out is valid
		{"ab\xffc", "PROMPT: invalid UTF-8 at byte offset 2 (0xff)"},
		{"é\xe9", "PROMPT: invalid UTF-8 at byte offset 2 (0xe9)"},        // a truncated sequence at the end
		{"\xed\xa0\x80", "PROMPT: invalid UTF-8 at byte offset 0 (0xed)"}, // a surrogate
		{"\xc0\xaf", "PROMPT: invalid UTF-8 at byte offset 0 (0xc0)"},     // overlong
	} {
		err := CheckUTF8("PROMPT", c.s)
		if (err == nil) != (c.want == "") || (err != nil && err.Error() != c.want) {
			t.Errorf("CheckUTF8(%q) = %v, want %q", c.s, err, c.want)
		}
	}
}
