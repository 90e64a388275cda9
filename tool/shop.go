package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/askwp/askwpd/extract"
	"github.com/askwp/askwpd/search"
	"github.com/askwp/askwpd/store"
)

// checkShop validates the product filters and the preferred language.
func (a *SearchArgs) checkShop() error {
	for _, p := range []struct {
		name string
		v    *float64
	}{{"price_min", a.Filters.PriceMin}, {"price_max", a.Filters.PriceMax}} {
		if p.v != nil && (*p.v < 0 || math.IsNaN(*p.v) || math.IsInf(*p.v, 0)) {
			return Invalid(fmt.Sprintf("filters.%s: want a price of 0 or more", p.name))
		}
	}
	if lo, hi := a.Filters.PriceMin, a.Filters.PriceMax; lo != nil && hi != nil && *lo > *hi {
		return Invalid(fmt.Sprintf("filters.price_min (%g) is above filters.price_max (%g)", *lo, *hi))
	}
	if a.Lang != "" && !knownLang(a.Lang) {
		return Invalid(fmt.Sprintf("lang: %q is not a language code; want an ISO 639-1 code such as en, fr or de (a region may follow: pt-BR)", a.Lang))
	}
	return nil
}

// productFilter is the store's filter for a's product filters, nil when
// it sets none.
func (a *SearchArgs) productFilter() *store.ProductFilter {
	f := a.Filters
	if f.InStock == nil && f.PriceMin == nil && f.PriceMax == nil {
		return nil
	}
	return &store.ProductFilter{InStock: f.InStock, PriceMin: f.PriceMin, PriceMax: f.PriceMax}
}

// filterProducts narrows q to the product pages that pass pf.
func (s *Service) filterProducts(ctx context.Context, q *search.Query, pf *store.ProductFilter) error {
	if pf == nil {
		return nil
	}
	ids, err := s.Store.ProductDocs(ctx, *pf)
	if err != nil {
		return err
	}
	q.Filters.Docs = ids
	return nil
}

// addFacts gives each result card its page's product, in one query for
// the cards (selective expansion's included), on a site that has product
// pages: elsewhere a search asks the store nothing more.
func (s *Service) addFacts(ctx context.Context, resp *SearchResponse) error {
	if ok, err := s.siteHas(ctx, ""); err != nil || !ok {
		return err
	}
	var urls []string
	seen := map[string]bool{}
	for _, e := range resp.Results {
		if !seen[e.URL] {
			seen[e.URL] = true
			urls = append(urls, e.URL)
		}
	}
	if len(urls) == 0 {
		return nil
	}
	facts, err := s.Store.DocumentFacts(ctx, urls)
	if err != nil {
		return err
	}
	for i := range resp.Results {
		e := &resp.Results[i]
		e.Product = decodeProduct(facts[e.URL].Product)
	}
	return nil
}

// decodeProduct reads a stored product; a row that does not decode has
// none rather than a wrong one.
func decodeProduct(raw json.RawMessage) *extract.Product {
	if len(raw) == 0 {
		return nil
	}
	var p extract.Product
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil
	}
	return &p
}
