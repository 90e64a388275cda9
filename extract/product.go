package extract

import (
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/net/html"
)

// Product is what a page says, in schema.org Product/Offer markup (JSON-LD
// or microdata), about the one product it sells. Every field is what the
// markup states, or absent: a price that is not a plain number ("call us",
// "from 10") is no price, never a guessed one.
type Product struct {
	Name  string `json:"name,omitempty"`
	SKU   string `json:"sku,omitempty"`
	Brand string `json:"brand,omitempty"`
	// Price is what a buyer pays now: the sale price when there is one,
	// the lowest offer of a product with variants.
	Price *float64 `json:"price,omitempty"`
	// HighPrice is the highest offer of a product with variants.
	HighPrice *float64 `json:"high_price,omitempty"`
	// RegularPrice is the list price a sale price stands against.
	RegularPrice *float64 `json:"regular_price,omitempty"`
	SalePrice    *float64 `json:"sale_price,omitempty"`
	Currency     string   `json:"currency,omitempty"`
	// Availability is schema.org's ItemAvailability name (InStock,
	// OutOfStock, BackOrder, PreOrder, …) without its URL prefix.
	Availability string `json:"availability,omitempty"`
	// InStock is set when Availability says either way.
	InStock     *bool    `json:"in_stock,omitempty"`
	Rating      *float64 `json:"rating,omitempty"`
	RatingCount int      `json:"rating_count,omitempty"`
	// Options are the choices of a product sold in variants (color: blue,
	// green), from a ProductGroup's variants or an offer's attributes.
	Options []ProductOption `json:"options,omitempty"`
}

// ProductOption is one attribute a product's variants differ by.
type ProductOption struct {
	Name   string   `json:"name"`
	Values []string `json:"values"`
}

// maxLDBytes caps one JSON-LD block: a product's markup is a few kB, and a
// block of megabytes is not one.
const maxLDBytes = 1 << 20

// extractProduct finds the page's product. A page with several different
// products (a category listing) has none of its own, so it gets none.
func extractProduct(doc *html.Node) *Product {
	var found []map[string]any
	walk(doc, func(n *html.Node) bool {
		if n.Type != html.ElementNode {
			return true
		}
		if n.Data == "script" {
			if strings.Contains(strings.ToLower(attr(n, "type")), "ld+json") && n.FirstChild != nil {
				found = append(found, ldProducts(n.FirstChild.Data)...)
			}
			return false
		}
		if hasAttr(n, "itemscope") && isProductType(attr(n, "itemtype")) && !insideItemscope(n) {
			found = append(found, microdataItem(n, 0))
			return false
		}
		return true
	})
	var best *Product
	for _, m := range found {
		p := productFrom(m)
		if p == nil {
			continue
		}
		if best != nil && !sameProduct(best, p) {
			return nil
		}
		if best == nil {
			best = p
		}
	}
	return best
}

func sameProduct(a, b *Product) bool {
	if a.SKU != "" && b.SKU != "" {
		return a.SKU == b.SKU
	}
	return strings.EqualFold(a.Name, b.Name)
}

// ldProducts returns the Product and ProductGroup objects of one JSON-LD
// block: a single object, an array, or an @graph. Broken JSON is none.
func ldProducts(src string) []map[string]any {
	if len(src) > maxLDBytes {
		return nil
	}
	var out []map[string]any
	walkLD(src, func(x map[string]any) []any {
		if hasType(x, "Product", "ProductGroup") {
			out = append(out, x)
			return nil
		}
		// A WebPage's mainEntity is its product.
		if e, ok := x["mainEntity"]; ok {
			return []any{e}
		}
		return nil
	})
	return out
}

// hasType reports whether a JSON-LD object's @type is one of types.
func hasType(m map[string]any, types ...string) bool {
	var ts []string
	switch t := m["@type"].(type) {
	case string:
		ts = []string{t}
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok {
				ts = append(ts, s)
			}
		}
	}
	for _, t := range ts {
		t = schemaName(t)
		for _, want := range types {
			if t == want {
				return true
			}
		}
	}
	return false
}

// schemaName strips a schema.org URL prefix: "http://schema.org/InStock"
// is InStock.
func schemaName(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexAny(s, "/#"); i >= 0 && strings.Contains(s, "schema.org") {
		s = s[i+1:]
	}
	return s
}

func isProductType(itemtype string) bool {
	for _, t := range strings.Fields(itemtype) {
		if n := schemaName(t); n == "Product" || n == "ProductGroup" {
			return true
		}
	}
	return false
}

// productFrom reads one Product or ProductGroup object.
func productFrom(m map[string]any) *Product {
	p := &Product{
		Name:  collapseSpace(ldString(m["name"])),
		SKU:   strings.TrimSpace(ldString(m["sku"])),
		Brand: collapseSpace(ldAuthor(m["brand"])),
	}
	if p.SKU == "" {
		p.SKU = strings.TrimSpace(ldString(m["productGroupID"]))
	}
	if r, ok := m["aggregateRating"].(map[string]any); ok {
		p.Rating = price(r["ratingValue"])
		if c := price(firstOf(r, "reviewCount", "ratingCount")); c != nil && *c < math.MaxInt32 {
			p.RatingCount = int(*c)
		}
	}
	offers := objects(m["offers"])
	var opts optionSet
	for _, v := range objects(m["hasVariant"]) {
		if !hasType(v, "Product") {
			continue
		}
		offers = append(offers, objects(v["offers"])...)
		for _, name := range variedBy(m, v) {
			opts.add(name, ldString(v[name]))
		}
		for _, pv := range objects(v["additionalProperty"]) {
			opts.add(ldString(pv["name"]), ldString(pv["value"]))
		}
	}
	readOffers(p, offers)
	p.Options = opts.list()
	if p.Name == "" && p.SKU == "" && p.Price == nil && p.Availability == "" {
		return nil
	}
	return p
}

// variedBy names the properties a variant differs by: the group's
// varyBy, else the usual ones it states.
func variedBy(group, variant map[string]any) []string {
	var names []string
	for _, v := range asList(group["varyBy"]) {
		if s, ok := v.(string); ok {
			names = append(names, lowerFirst(schemaName(s)))
		}
	}
	if len(names) > 0 {
		return names
	}
	for _, k := range []string{"color", "size", "material", "pattern"} {
		if _, ok := variant[k]; ok {
			names = append(names, k)
		}
	}
	return names
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// readOffers sets the prices and availability from a product's offers.
// WooCommerce prints a simple product's offer with a priceSpecification
// (a sale adds a second one, the ListPrice), older versions a plain price,
// and a variable product's as an AggregateOffer with lowPrice/highPrice.
func readOffers(p *Product, offers []map[string]any) {
	var low, high *float64
	anyIn, anyOut := false, false
	for _, o := range offers {
		if p.Currency == "" {
			p.Currency = strings.ToUpper(strings.TrimSpace(ldString(o["priceCurrency"])))
		}
		now, list := offerPrices(o, p)
		if hasType(o, "AggregateOffer") {
			now, high = price(o["lowPrice"]), maxPrice(high, price(o["highPrice"]))
		}
		if now != nil {
			if low == nil || *now < *low {
				low = now
			}
			high = maxPrice(high, now)
		}
		if list != nil && now != nil && *list > *now && len(offers) == 1 {
			p.RegularPrice, p.SalePrice = list, now
		}
		if a := schemaName(ldString(o["availability"])); a != "" {
			if p.Availability == "" || (inStock(a) != nil && *inStock(a)) {
				p.Availability = a
			}
			if s := inStock(a); s != nil {
				anyIn, anyOut = anyIn || *s, anyOut || !*s
			}
		}
	}
	p.Price = low
	if high != nil && low != nil && *high > *low {
		p.HighPrice = high
	}
	if anyIn || anyOut {
		in := anyIn
		p.InStock = &in
	}
}

// offerPrices reads an offer's current price and its list price, from its
// priceSpecification(s) or its own price.
func offerPrices(o map[string]any, p *Product) (now, list *float64) {
	for _, s := range objects(o["priceSpecification"]) {
		v := price(s["price"])
		if v == nil {
			continue
		}
		if p.Currency == "" {
			p.Currency = strings.ToUpper(strings.TrimSpace(ldString(s["priceCurrency"])))
		}
		if schemaName(ldString(s["priceType"])) == "ListPrice" || schemaName(ldString(s["priceType"])) == "SRP" {
			list = maxPrice(list, v)
			continue
		}
		if now == nil || *v < *now {
			now = v
		}
	}
	if now == nil {
		now = price(o["price"])
	}
	return now, list
}

func maxPrice(a, b *float64) *float64 {
	if a == nil || (b != nil && *b > *a) {
		return b
	}
	return a
}

// inStock says whether an availability means the product can be bought
// now; nil when it says neither (an unknown word).
func inStock(a string) *bool {
	var v bool
	switch a {
	case "InStock", "LimitedAvailability", "OnlineOnly", "InStoreOnly":
		v = true
	case "OutOfStock", "SoldOut", "Discontinued", "BackOrder", "PreOrder", "PreSale", "MadeToOrder", "Reserved":
		v = false
	default:
		return nil
	}
	return &v
}

var plainNumber = regexp.MustCompile(`^[0-9]{1,12}(\.[0-9]{1,6})?$`)

// price reads a price or rating: a JSON number or a string holding only a
// decimal number. Anything else ("call us", "10-20", "€10") is no price.
func price(v any) *float64 {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case string:
		s := strings.TrimSpace(x)
		if !plainNumber.MatchString(s) {
			return nil
		}
		var err error
		if f, err = strconv.ParseFloat(s, 64); err != nil {
			return nil
		}
	case []any:
		if len(x) == 1 {
			return price(x[0])
		}
		return nil
	default:
		return nil
	}
	if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return nil
	}
	return &f
}

func firstOf(m map[string]any, keys ...string) any {
	for _, k := range keys {
		if v, ok := m[k]; ok {
			return v
		}
	}
	return nil
}

func asList(v any) []any {
	switch x := v.(type) {
	case []any:
		return x
	case nil:
		return nil
	}
	return []any{v}
}

// objects is v's objects: one object, or those of a list.
func objects(v any) []map[string]any {
	var out []map[string]any
	for _, e := range asList(v) {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// optionSet collects variant attribute values in the order met.
type optionSet struct {
	names  []string
	values map[string][]string
}

func (o *optionSet) add(name, value string) {
	name, value = collapseSpace(name), collapseSpace(value)
	if name == "" || value == "" {
		return
	}
	if o.values == nil {
		o.values = map[string][]string{}
	}
	if _, ok := o.values[name]; !ok {
		o.names = append(o.names, name)
	}
	for _, v := range o.values[name] {
		if strings.EqualFold(v, value) {
			return
		}
	}
	o.values[name] = append(o.values[name], value)
}

func (o *optionSet) list() []ProductOption {
	var out []ProductOption
	for _, n := range o.names {
		out = append(out, ProductOption{Name: n, Values: o.values[n]})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return true
		}
	}
	return false
}

// insideItemscope reports an element nested in another microdata item:
// a product there is that item's (an offer's itemOffered), not the page's.
func insideItemscope(n *html.Node) bool {
	for p := n.Parent; p != nil; p = p.Parent {
		if p.Type == html.ElementNode && hasAttr(p, "itemscope") {
			return true
		}
	}
	return false
}

// microdataItem reads a microdata item into the shape JSON-LD decodes to,
// so that one reader serves both: itemprop names are keys, nested items
// are objects, repeated properties are lists.
func microdataItem(item *html.Node, depth int) map[string]any {
	m := map[string]any{}
	if t := strings.Fields(attr(item, "itemtype")); len(t) > 0 {
		m["@type"] = schemaName(t[0])
	}
	if depth > 6 {
		return m
	}
	for c := item.FirstChild; c != nil; c = c.NextSibling {
		walk(c, func(n *html.Node) bool {
			if n.Type != html.ElementNode {
				return false
			}
			props := strings.Fields(attr(n, "itemprop"))
			scoped := hasAttr(n, "itemscope")
			if len(props) == 0 {
				return !scoped
			}
			var v any
			if scoped {
				v = microdataItem(n, depth+1)
			} else {
				v = microdataValue(n)
			}
			for _, p := range props {
				switch old := m[p].(type) {
				case nil:
					m[p] = v
				case []any:
					m[p] = append(old, v)
				default:
					m[p] = []any{old, v}
				}
			}
			return !scoped
		})
	}
	return m
}

// microdataValue is a property's value as the microdata spec reads it.
func microdataValue(n *html.Node) string {
	if hasAttr(n, "content") {
		return strings.TrimSpace(attr(n, "content"))
	}
	switch n.Data {
	case "a", "link", "area":
		return strings.TrimSpace(attr(n, "href"))
	case "img", "source", "audio", "video":
		return strings.TrimSpace(attr(n, "src"))
	case "time":
		if hasAttr(n, "datetime") {
			return strings.TrimSpace(attr(n, "datetime"))
		}
	case "data", "meter":
		return strings.TrimSpace(attr(n, "value"))
	}
	return collapseSpace(textContent(n))
}
