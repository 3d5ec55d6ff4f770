package main

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// cell makes text that came from a repository or a server safe to print in
// a table: control characters (tabs and newlines too, which would break
// the table), Unicode's bidirectional controls (which reorder what a
// terminal shows) and bytes that are not UTF-8 are printed as escapes
// (\n, \x1b, \u202e), so that the text cannot drive the terminal.
func cell(s string) string { return escape(s, false) }

// escapeControls is cell for text of several lines: newlines stay.
func escapeControls(s string) string { return escape(s, true) }

func escape(s string, keepNewlines bool) string {
	clean := true
	for _, r := range s {
		if unsafeRune(r, keepNewlines) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case !unsafeRune(r, keepNewlines):
			b.WriteString(s[:size])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		s = s[size:]
	}
	return b.String()
}

func unsafeRune(r rune, keepNewlines bool) bool {
	if r == '\n' && keepNewlines {
		return false
	}
	return r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
}
