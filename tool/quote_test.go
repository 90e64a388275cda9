package tool

import (
	"testing"
	"unicode/utf8"
)

func TestFindQuote(t *testing.T) {
	body := "## Prices\n\nA bag costs **€12** — “fresh” roasted.\n\nA bag costs **€12** again…  \nEnd.\n\n\\# not a heading \\<b\\>"
	runes := []rune(body)
	for _, c := range []struct {
		name, quote, kind, want string
		n                       int
	}{
		{"exact", "A bag costs **€12**", "exact", "A bag costs **€12**", 2},
		{"emphasis and dash", `costs €12 - "fresh" roasted.`, "normalized", "costs **€12** — “fresh” roasted.", 1},
		{"whitespace", "again...\n End.", "normalized", "again…  \nEnd.", 1},
		{"missing", "A bag costs €13", "", "", 0},
		{"blank", "   ", "", "", 0},
		{"escaped first character", "# not a heading", "normalized", "\\# not a heading", 1},
		{"escaped markup", "<b>", "normalized", "\\<b\\>", 1},
	} {
		m := findQuote(body, c.quote)
		if c.kind == "" {
			if m.found {
				t.Errorf("%s: found %q", c.name, string(runes[m.start:m.end]))
			}
			continue
		}
		if !m.found || m.kind != c.kind || string(runes[m.start:m.end]) != c.want || len(m.starts) != c.n {
			t.Errorf("%s: %+v = %q, want %s %q ×%d", c.name, m, string(runes[m.start:m.end]), c.kind, c.want, c.n)
		}
	}
}

func FuzzFindQuote(f *testing.F) {
	f.Add("Héllo “world” — **bold**\n\nnext", 3, 12)
	f.Fuzz(func(t *testing.T, body string, i, j int) {
		if !utf8.ValidString(body) {
			return
		}
		r := []rune(body)
		if len(r) == 0 {
			return
		}
		i, j = abs(i)%len(r), abs(j)%len(r)
		if i > j {
			i, j = j, i
		}
		q := string(r[i : j+1])
		m := findQuote(body, q)
		// Any slice of the body is found, and what is found is a slice
		// of the body with valid offsets.
		if m.found && (m.start < 0 || m.end > len(r) || m.start > m.end) {
			t.Fatalf("offsets [%d,%d] out of range %d", m.start, m.end, len(r))
		}
		if !m.found && len(normalizeQuoteString(q)) > 0 {
			t.Fatalf("slice %q of %q not found", q, body)
		}
	})
}

func normalizeQuoteString(s string) []rune {
	r, _ := normalizeQuote(s)
	return r
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
