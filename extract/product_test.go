package extract

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func extractHTML(t testing.TB, page, u string) *Result {
	t.Helper()
	res, err := Extract(context.Background(), strings.NewReader(page), Options{URL: u, NoChunks: true})
	if err != nil {
		t.Fatalf("extract: %v", err)
	}
	return res
}

func ldPage(lds ...string) string {
	var b strings.Builder
	b.WriteString(`<!doctype html><html lang="en-US"><head><title>Shop</title>`)
	for _, ld := range lds {
		b.WriteString(`<script type="application/ld+json">` + ld + `</script>`)
	}
	b.WriteString(`</head><body><main><h1>A product</h1><p>Made by hand from stoneware and glazed twice.</p></main></body></html>`)
	return b.String()
}

// wooSimple is the @graph WooCommerce 9 prints on a simple product on
// sale: the sale price, and the regular price as a ListPrice.
const wooSimple = `{"@context":"https://schema.org/","@graph":[
 {"@context":"https://schema.org/","@type":"BreadcrumbList","itemListElement":[{"@type":"ListItem","position":1,"item":{"name":"Home","@id":"https://shop.test/"}}]},
 {"@context":"https://schema.org/","@type":"Product","@id":"https://shop.test/product/stoneware-mug/#product",
  "name":"Stoneware Mug","url":"https://shop.test/product/stoneware-mug/","sku":"MUG-STONE-BLUE",
  "brand":{"@type":"Brand","name":"Kiln &amp; Co"},
  "aggregateRating":{"@type":"AggregateRating","ratingValue":"4.50","reviewCount":12},
  "offers":[{"@type":"Offer","priceSpecification":[
     {"@type":"UnitPriceSpecification","price":"15.00","priceCurrency":"USD","valueAddedTaxIncluded":false,"validThrough":"2027-12-31"},
     {"@type":"UnitPriceSpecification","price":"18.00","priceCurrency":"USD","valueAddedTaxIncluded":false,"validThrough":"2027-12-31","priceType":"https://schema.org/ListPrice"}],
   "priceValidUntil":"2027-12-31","availability":"http://schema.org/InStock","url":"https://shop.test/product/stoneware-mug/"}]}]}`

func num(f float64) *float64 { return &f }

func eqNum(a, b *float64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return math.Abs(*a-*b) < 1e-9
}

func TestProduct_WooCommerceSimpleOnSale(t *testing.T) {
	p := extractHTML(t, ldPage(wooSimple), "https://shop.test/product/stoneware-mug/").Product
	if p == nil {
		t.Fatal("no product")
	}
	if p.Name != "Stoneware Mug" || p.SKU != "MUG-STONE-BLUE" || p.Currency != "USD" || p.Availability != "InStock" {
		t.Errorf("product = %+v", p)
	}
	if !eqNum(p.Price, num(15)) || !eqNum(p.SalePrice, num(15)) || !eqNum(p.RegularPrice, num(18)) || p.HighPrice != nil {
		t.Errorf("prices: price %v sale %v regular %v high %v", p.Price, p.SalePrice, p.RegularPrice, p.HighPrice)
	}
	if p.InStock == nil || !*p.InStock {
		t.Errorf("in_stock = %v", p.InStock)
	}
	if !eqNum(p.Rating, num(4.5)) || p.RatingCount != 12 {
		t.Errorf("rating %v count %d", p.Rating, p.RatingCount)
	}
	if p.Brand != "Kiln &amp; Co" {
		// JSON-LD is not HTML: an entity in it is text as written.
		t.Errorf("brand %q", p.Brand)
	}
}

func TestProduct_Shapes(t *testing.T) {
	tests := []struct {
		name  string
		page  string
		want  *Product
		empty bool
	}{
		{name: "single object, plain price, out of stock",
			page: ldPage(`{"@context":"https://schema.org","@type":"Product","name":"Teapot","sku":"TP-1",
				"offers":{"@type":"Offer","price":42,"priceCurrency":"eur","availability":"https://schema.org/OutOfStock"}}`),
			want: &Product{Name: "Teapot", SKU: "TP-1", Price: num(42), Currency: "EUR", Availability: "OutOfStock", InStock: new(bool)}},
		{name: "array of objects, variable product as AggregateOffer",
			page: ldPage(`[{"@type":"WebSite","name":"x"},{"@type":"Product","name":"Bowl","offers":[{"@type":"AggregateOffer",
				"lowPrice":"12.00","highPrice":"14.50","offerCount":3,"priceCurrency":"USD","availability":"http://schema.org/InStock"}]}]`),
			want: &Product{Name: "Bowl", Price: num(12), HighPrice: num(14.5), Currency: "USD", Availability: "InStock", InStock: ptrTrue()}},
		{name: "ProductGroup with variants: one product, its options",
			page: ldPage(`{"@context":"https://schema.org","@type":"ProductGroup","name":"Enamel Mug","productGroupID":"EM",
				"varyBy":"https://schema.org/color","hasVariant":[
				{"@type":"Product","sku":"EM-B","color":"Blue","offers":{"@type":"Offer","price":"19.00","priceCurrency":"USD","availability":"https://schema.org/InStock"}},
				{"@type":"Product","sku":"EM-G","color":"Green","offers":{"@type":"Offer","price":"21.00","priceCurrency":"USD","availability":"https://schema.org/OutOfStock"}}]}`),
			want: &Product{Name: "Enamel Mug", SKU: "EM", Price: num(19), HighPrice: num(21), Currency: "USD", Availability: "InStock",
				InStock: ptrTrue(), Options: []ProductOption{{Name: "color", Values: []string{"Blue", "Green"}}}}},
		{name: "a price of 'call us' is no price",
			page: ldPage(`{"@type":"Product","name":"Kiln","sku":"K-9","offers":{"@type":"Offer","price":"call us","priceCurrency":"USD"}}`),
			want: &Product{Name: "Kiln", SKU: "K-9", Currency: "USD"}},
		{name: "priced with a symbol or a range is no price",
			page: ldPage(`{"@type":"Product","name":"Vase","offers":[{"@type":"Offer","price":"$10"},{"@type":"Offer","price":"10-20"},{"@type":"Offer","price":-3}]}`),
			want: &Product{Name: "Vase"}},
		{name: "broken JSON-LD is ignored; the microdata still counts",
			page: strings.Replace(ldPage(`{"@type":"Product","name":"Broken", "offers": {"price": "9.00",}`), `<main>`,
				`<main><div itemscope itemtype="https://schema.org/Product"><span itemprop="name">Plate</span>
				<meta itemprop="sku" content="PL-1"><div itemprop="offers" itemscope itemtype="https://schema.org/Offer">
				<span itemprop="price" content="8.50">$8.50</span><meta itemprop="priceCurrency" content="USD">
				<link itemprop="availability" href="https://schema.org/InStock"></div>
				<div itemprop="aggregateRating" itemscope itemtype="https://schema.org/AggregateRating"><span itemprop="ratingValue">4</span>
				<span itemprop="reviewCount">3</span></div></div>`, 1),
			want: &Product{Name: "Plate", SKU: "PL-1", Price: num(8.5), Currency: "USD", Availability: "InStock", InStock: ptrTrue(),
				Rating: num(4), RatingCount: 3}},
		{name: "broken JSON-LD alone: no product",
			page:  ldPage(`{"@type":"Product","name":"Broken", "offers": {"price": "9.00",}`),
			empty: true},
		{name: "two different products: a listing, not a product page",
			page:  ldPage(`{"@type":"Product","name":"A","sku":"A"}`, `{"@type":"Product","name":"B","sku":"B"}`),
			empty: true},
		{name: "an article is not a product",
			page:  ldPage(`{"@type":"Article","headline":"Care for your mug"}`),
			empty: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := extractHTML(t, tt.page, "https://shop.test/x/").Product
			if tt.empty {
				if p != nil {
					t.Fatalf("product = %+v, want none", p)
				}
				return
			}
			got, _ := json.Marshal(p)
			want, _ := json.Marshal(tt.want)
			if string(got) != string(want) {
				t.Errorf("product\n got %s\nwant %s", got, want)
			}
		})
	}
}

func ptrTrue() *bool { b := true; return &b }

// FuzzProduct holds the product reader to what it promises on any input:
// no panic, and a price is always a finite, non-negative number that the
// input spells out.
func FuzzProduct(f *testing.F) {
	f.Add(wooSimple)
	f.Add(`{"@type":"Product","offers":{"price":"call us"}}`)
	f.Add(`{"@type":"ProductGroup","hasVariant":[{"@type":"Product","color":"Blue","offers":{"price":1}}]}`)
	f.Add(`{"@graph":[{"@graph":[{"@type":["Product"],"offers":[[{"price":"1.5"}]]}]}]}`)
	f.Fuzz(func(t *testing.T, ld string) {
		res, err := Extract(context.Background(), strings.NewReader(ldPage(ld)), Options{URL: "https://shop.test/", NoChunks: true})
		if err != nil || res.Product == nil {
			return
		}
		p := res.Product
		for _, v := range []*float64{p.Price, p.HighPrice, p.RegularPrice, p.SalePrice, p.Rating} {
			if v != nil && (math.IsNaN(*v) || math.IsInf(*v, 0) || *v < 0) {
				t.Fatalf("bad number %v in %+v", *v, p)
			}
		}
		if p.HighPrice != nil && (p.Price == nil || *p.HighPrice <= *p.Price) {
			t.Fatalf("high price %v without a lower price %v", *p.HighPrice, p.Price)
		}
		if p.SalePrice != nil && (p.RegularPrice == nil || *p.SalePrice >= *p.RegularPrice) {
			t.Fatalf("sale price %v not below the regular %v", *p.SalePrice, p.RegularPrice)
		}
	})
}
