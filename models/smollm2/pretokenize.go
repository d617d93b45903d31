package smollm2

import (
	"unicode"
	"unicode/utf8"
)

// splitWords splits text into the words of GPT-2's byte-level pre-tokenizer, the pattern
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// tried in that order at each position (leftmost-first alternation, as in Hugging Face
// tokenizers' ByteLevel with use_regex). Go's regexp has no look-ahead, so this is written out:
// a run of white space followed by a word leaves its last space to that word (" cat").
// Concatenating the words gives text back.
func splitWords(text string) []string {
	var words []string
	for i := 0; i < len(text); {
		n := wordAt(text[i:])
		words = append(words, text[i:i+n])
		i += n
	}
	return words
}

type class int

const (
	classLetter class = iota
	classNumber
	classSpace
	classOther
)

func classOf(r rune) class {
	switch {
	case unicode.IsLetter(r):
		return classLetter
	case unicode.IsNumber(r):
		return classNumber
	case unicode.IsSpace(r):
		return classSpace
	}
	return classOther
}

// runAt is the length in bytes of the run of runes of class c at the start of s.
func runAt(s string, c class) int {
	n := 0
	for n < len(s) {
		r, w := utf8.DecodeRuneInString(s[n:])
		if classOf(r) != c {
			break
		}
		n += w
	}
	return n
}

// wordAt is the length of the word at the start of s (len(s) > 0).
func wordAt(s string) int {
	// 's 't 're 've 'm 'll 'd
	if s[0] == '\'' {
		for _, c := range [...]string{"s", "t", "re", "ve", "m", "ll", "d"} {
			if len(s) > len(c) && s[1:1+len(c)] == c {
				return 1 + len(c)
			}
		}
	}
	// ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+'
	lead := 0
	if s[0] == ' ' && len(s) > 1 {
		lead = 1
	}
	for _, c := range [...]class{classLetter, classNumber, classOther} {
		if lead == 1 {
			if n := runAt(s[1:], c); n > 0 {
				return 1 + n
			}
		}
		if n := runAt(s, c); n > 0 {
			return n
		}
	}
	// \s+(?!\S): the white-space run, less its last character when a non-space follows; else \s+.
	n := runAt(s, classSpace)
	if n == 0 { // cannot happen: every rune has a class; keep the loop moving
		_, w := utf8.DecodeRuneInString(s)
		return w
	}
	if n < len(s) {
		_, last := utf8.DecodeLastRuneInString(s[:n])
		if n-last > 0 {
			return n - last
		}
	}
	return n
}

// byteToRune is GPT-2's map from bytes to printable characters: the printable Latin-1 bytes
// ('!'–'~', '¡'–'¬', '®'–'ÿ') map to themselves, the other 68 to U+0100 onwards in byte order
// (so a space, 0x20, is 'Ġ' U+0120 and a newline 'Ċ' U+010A).
var byteToRune [256]rune

// runeToByte inverts byteToRune.
var runeToByte = map[rune]byte{}

func init() {
	next := rune(256)
	for b := 0; b < 256; b++ {
		if ('!' <= b && b <= '~') || (0xa1 <= b && b <= 0xac) || (0xae <= b && b <= 0xff) {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = next
			next++
		}
		runeToByte[byteToRune[b]] = byte(b)
	}
}
