package index

import "testing"

func TestURLWords(t *testing.T) {
	for _, c := range []struct{ url, want string }{
		{"https://shop.test/2024/05/how-to-bake-sourdough/", "how to bake sourdough "},
		{"https://docs.test/block-editor/reference/add_sidebar.html", "block editor reference add sidebar "},
		{"https://site.test/?p=12", ""},
		{"https://site.test/", ""},
		{"beir:12345", ""},
	} {
		if got := urlWords(c.url); got != c.want {
			t.Errorf("urlWords(%q) = %q, want %q", c.url, got, c.want)
		}
	}
}
