package wp

import "strings"

type tokKind int

const (
	tPunct tokKind = iota
	tIdent
	tVar
	tString
	tNumber
)

type token struct {
	kind tokKind
	text string // for strings, the decoded value
}

// lexPHP tokenizes enough PHP to read configuration files: it knows
// comments, single- and double-quoted strings, variables, identifiers and
// numbers, and leaves everything else as one-character punctuation. Text
// outside <?php ... ?> is skipped.
func lexPHP(src string) []token {
	var toks []token
	i := 0
	inPHP := false
	for i < len(src) {
		if !inPHP {
			j := strings.Index(src[i:], "<?")
			if j < 0 {
				break
			}
			i += j + 2
			if strings.HasPrefix(src[i:], "php") {
				i += 3
			} else if strings.HasPrefix(src[i:], "=") {
				i++
			}
			inPHP = true
			continue
		}
		c := src[i]
		switch {
		case c == '?' && strings.HasPrefix(src[i:], "?>"):
			inPHP = false
			i += 2
			toks = append(toks, token{tPunct, ";"})
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#' || c == '/' && strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				if strings.HasPrefix(src[i:], "?>") {
					break
				}
				i++
			}
		case c == '/' && strings.HasPrefix(src[i:], "/*"):
			j := strings.Index(src[i+2:], "*/")
			if j < 0 {
				i = len(src)
			} else {
				i += j + 4
			}
		case c == '\'':
			var b strings.Builder
			i++
			for i < len(src) && src[i] != '\'' {
				if src[i] == '\\' && i+1 < len(src) && (src[i+1] == '\'' || src[i+1] == '\\') {
					i++
				}
				b.WriteByte(src[i])
				i++
			}
			i++
			toks = append(toks, token{tString, b.String()})
		case c == '"':
			var b strings.Builder
			i++
			for i < len(src) && src[i] != '"' {
				if src[i] == '\\' && i+1 < len(src) {
					i++
					switch src[i] {
					case 'n':
						b.WriteByte('\n')
					case 't':
						b.WriteByte('\t')
					case 'r':
						b.WriteByte('\r')
					case '"', '\\', '$':
						b.WriteByte(src[i])
					default:
						b.WriteByte('\\')
						b.WriteByte(src[i])
					}
					i++
					continue
				}
				b.WriteByte(src[i])
				i++
			}
			i++
			toks = append(toks, token{tString, b.String()})
		case c == '$' && i+1 < len(src) && isIdentStart(src[i+1]):
			j := i + 1
			for j < len(src) && isIdentChar(src[j]) {
				j++
			}
			toks = append(toks, token{tVar, src[i:j]})
			i = j
		case isIdentStart(c) || c == '\\':
			j := i
			for j < len(src) && (isIdentChar(src[j]) || src[j] == '\\') {
				j++
			}
			// Namespaced calls such as \define read like define.
			toks = append(toks, token{tIdent, strings.TrimLeft(src[i:j], "\\")})
			i = j
		case c >= '0' && c <= '9':
			j := i
			for j < len(src) && (src[j] >= '0' && src[j] <= '9' || src[j] == '.' || src[j] == '_') {
				j++
			}
			toks = append(toks, token{tNumber, src[i:j]})
			i = j
		default:
			toks = append(toks, token{tPunct, string(c)})
			i++
		}
	}
	return toks
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func isIdentChar(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }
