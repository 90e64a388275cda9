package store

import (
	"context"
	"encoding/json"
	"reflect"
	"sort"
	"testing"
)

func TestProductDocs_StockAndPrice(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	put := func(url, product string) int64 {
		d := &Document{URL: url, Title: url, Body: "x", ContentHash: url, Lang: "en-US"}
		if product != "" {
			d.Product = json.RawMessage(product)
		}
		r, err := db.PutDocument(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	mug := put("https://s.test/mug/", `{"name":"Mug","price":15,"in_stock":true}`)
	bowl := put("https://s.test/bowl/", `{"name":"Bowl","price":12,"high_price":20,"in_stock":true}`)
	pot := put("https://s.test/pot/", `{"name":"Pot","price":18,"in_stock":false}`)
	kiln := put("https://s.test/kiln/", `{"name":"Kiln"}`)
	put("https://s.test/about/", "")
	f := func(v float64) *float64 { return &v }
	yes, no := true, false
	tests := []struct {
		name string
		f    ProductFilter
		want []int64
	}{
		{"every product", ProductFilter{}, []int64{mug, bowl, pot, kiln}},
		{"in stock", ProductFilter{InStock: &yes}, []int64{mug, bowl}},
		{"out of stock", ProductFilter{InStock: &no}, []int64{pot}},
		{"at most 15", ProductFilter{PriceMax: f(15)}, []int64{mug, bowl}},
		{"at least 16: the bowl's variants reach 20", ProductFilter{PriceMin: f(16)}, []int64{bowl, pot}},
		{"in stock, 13 to 16", ProductFilter{InStock: &yes, PriceMin: f(13), PriceMax: f(16)}, []int64{mug, bowl}},
	}
	for _, tt := range tests {
		got, err := db.ProductDocs(ctx, tt.f)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for id := range got {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		if !reflect.DeepEqual(ids, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, ids, tt.want)
		}
	}
}

// A price or stock change rewrites the document even when its text is the
// same: the old facts must not outlive the page.
func TestPutDocument_ProductChangeIsAChange(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	d := &Document{URL: "https://s.test/mug/", Title: "Mug", Body: "A mug", ContentHash: "h", Lang: "en",
		Product:      json.RawMessage(`{"price":15,"in_stock":true}`),
		Translations: []Translation{{Lang: "fr", URL: "https://s.test/fr/tasse/"}}}
	if _, err := db.PutDocument(ctx, d); err != nil {
		t.Fatal(err)
	}
	same := *d
	if r, err := db.PutDocument(ctx, &same); err != nil || !r.Unchanged {
		t.Fatalf("same document: %+v %v", r, err)
	}
	sold := *d
	sold.Product = json.RawMessage(`{"price":15,"in_stock":false}`)
	if r, err := db.PutDocument(ctx, &sold); err != nil || r.Unchanged {
		t.Fatalf("sold out: %+v %v", r, err)
	}
	got, err := db.FindDocument(ctx, d.URL, false)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Product) != string(sold.Product) || !reflect.DeepEqual(got.Translations, d.Translations) {
		t.Errorf("stored product %s translations %v", got.Product, got.Translations)
	}
	facts, err := db.DocumentFacts(ctx, []string{got.URL, "https://s.test/none/"})
	if err != nil {
		t.Fatal(err)
	}
	if len(facts) != 1 || facts[got.URL].Lang != "en" || string(facts[got.URL].Product) != string(sold.Product) {
		t.Errorf("facts = %+v", facts)
	}
	if has, err := db.HasProducts(ctx); err != nil || !has {
		t.Errorf("HasProducts = %v %v", has, err)
	}
	langs, err := db.Languages(ctx)
	if err != nil || !reflect.DeepEqual(langs, []string{"en"}) {
		t.Errorf("languages = %v %v", langs, err)
	}
}
