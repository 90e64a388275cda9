package chat

import (
	"testing"

	"github.com/askwp/askwpd/extract"
)

func TestProductAttrs(t *testing.T) {
	price, in := 15.0, true
	got := productAttrs("en-US", &extract.Product{Name: "Stoneware Mug", Price: &price, Currency: "USD", InStock: &in})
	want := ` lang="en-US" product="{\"name\":\"Stoneware Mug\",\"price\":15,\"currency\":\"USD\",\"in_stock\":true}"`
	if got != want {
		t.Errorf("productAttrs = %s\nwant %s", got, want)
	}
	if got := productAttrs("", nil); got != "" {
		t.Errorf("no lang, no product: %q", got)
	}
}
