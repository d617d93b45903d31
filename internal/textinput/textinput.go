// Package textinput holds the one rule for text given to mhalab — a PROMPT, a SENTENCE, a line
// of chat read from stdin: it must be valid UTF-8. Text that is not is refused with one line
// naming where it came from and the offset of the first bad byte, never tokenized as best it can.
package textinput

import (
	"fmt"
	"unicode/utf8"
)

// CheckUTF8 returns nil when s is valid UTF-8, else one line: "WHAT: invalid UTF-8 at byte
// offset N (0xBB)", N counted from 0, BB the byte there.
func CheckUTF8(what, s string) error {
	if utf8.ValidString(s) {
		return nil
	}
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && w == 1 {
			return fmt.Errorf("%s: invalid UTF-8 at byte offset %d (0x%02x)", what, i, s[i])
		}
		i += w
	}
	return nil
}
