package extract

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/transform"
)

// DefaultMaxBytes is the input cap used when Options.MaxBytes is 0.
const DefaultMaxBytes = 5 << 20

var charsetRe = regexp.MustCompile(`(?i)<meta[^>]+charset\s*=\s*["']?\s*([a-zA-Z0-9_:.-]+)`)

// readCapped reads at most max bytes; truncated reports whether input was cut.
// A cut is moved back to the last '<' in the final 4 KiB so no tag is left half-open
// and to a rune boundary so no partial UTF-8 sequence is left.
func readCapped(r io.Reader, max int64) ([]byte, bool, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, false, fmt.Errorf("extract: read input: %w", err)
	}
	if int64(len(data)) <= max {
		return data, false, nil
	}
	data = data[:max]
	if i := bytes.LastIndexByte(data, '<'); i >= 0 && len(data)-i < 4096 {
		data = data[:i]
	}
	return data, true, nil
}

// toUTF8 converts the page to UTF-8. Order: BOM, then a declared charset (meta
// prescan over the first 1 KiB, then anywhere in the first 16 KiB), except that
// content which is already valid UTF-8 is kept as is: pages that declare a legacy
// charset but serve UTF-8 are common, and the reverse cannot be valid UTF-8.
func toUTF8(data []byte) []byte {
	e, name, certain := charset.DetermineEncoding(data, "")
	if certain && name == "utf-8" {
		return data
	}
	if utf8.Valid(data) {
		return data
	}
	if !certain && name == "windows-1252" {
		head := data
		if len(head) > 16<<10 {
			head = head[:16<<10]
		}
		if m := charsetRe.FindSubmatch(head); m != nil {
			if e2, _ := charset.Lookup(string(m[1])); e2 != nil {
				e = e2
			}
		}
	}
	if e == nil || e == encoding.Nop {
		return data
	}
	out, _, err := transform.Bytes(e.NewDecoder(), data)
	if err != nil {
		return data
	}
	return out
}
