package store

import (
	"context"
	"encoding/json"
	"fmt"
)

// Translation is another language's version of a document.
type Translation struct {
	Lang string `json:"lang"`
	URL  string `json:"url"`
}

func jsonTranslations(ts []Translation) string {
	if len(ts) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(ts)
	return string(b)
}

func parseTranslations(s string) []Translation {
	var ts []Translation
	if s == "" || s == "[]" {
		return nil
	}
	_ = json.Unmarshal([]byte(s), &ts)
	return ts
}

// ProductFilter selects product pages by their stock and price. A nil
// field does not filter; a page whose product does not state the field
// (no price, an unknown availability) does not pass a filter on it.
type ProductFilter struct {
	InStock *bool
	// PriceMin and PriceMax bound the product's price range: a product
	// with variants from 12 to 20 passes a maximum of 15 and a minimum of
	// 18.
	PriceMin, PriceMax *float64
}

// productDocsQuery reads the product pages alone, through the partial
// index documents_product (migration 012). A price is the extractor's
// number; a product with variants has its lowest in price and its
// highest in high_price.
const productDocsQuery = `SELECT id FROM documents WHERE product <> ''
	AND (?1 IS NULL OR json_extract(product, '$.in_stock') = ?1)
	AND (?2 IS NULL OR coalesce(json_extract(product, '$.high_price'), json_extract(product, '$.price')) >= ?2)
	AND (?3 IS NULL OR json_extract(product, '$.price') <= ?3)`

// ProductDocs returns the ids of the documents whose product passes f.
func (db *DB) ProductDocs(ctx context.Context, f ProductFilter) (map[int64]bool, error) {
	var inStock, lo, hi any
	if f.InStock != nil {
		inStock = boolInt(*f.InStock)
	}
	if f.PriceMin != nil {
		lo = *f.PriceMin
	}
	if f.PriceMax != nil {
		hi = *f.PriceMax
	}
	rows, err := db.readRows(ctx, productDocsQuery, inStock, lo, hi)
	if err != nil {
		return nil, fmt.Errorf("store: product documents: %w", err)
	}
	defer rows.Close()
	ids := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("store: product documents: %w", err)
		}
		ids[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: product documents: %w", err)
	}
	return ids, nil
}

// Facts are what a search hit shows of its document beyond the index:
// its language, product and translations.
type Facts struct {
	Lang         string
	Product      json.RawMessage
	Translations []Translation
}

// DocumentFacts returns the facts of the documents at the given URLs;
// URLs not stored are absent from the map.
func (db *DB) DocumentFacts(ctx context.Context, urls []string) (map[string]Facts, error) {
	out := map[string]Facts{}
	if len(urls) == 0 {
		return out, nil
	}
	// One statement for any number of URLs, prepared once (as UnindexedLinks).
	rows, err := db.readRows(ctx, `SELECT url, lang, product, translations FROM documents
		WHERE url IN (SELECT value FROM json_each(?))`, jsonList(urls))
	if err != nil {
		return nil, fmt.Errorf("store: document facts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var url, lang, product, transl string
		if err := rows.Scan(&url, &lang, &product, &transl); err != nil {
			return nil, fmt.Errorf("store: document facts: %w", err)
		}
		f := Facts{Lang: lang, Translations: parseTranslations(transl)}
		if product != "" {
			f.Product = json.RawMessage(product)
		}
		out[url] = f
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: document facts: %w", err)
	}
	return out, nil
}

// HasProducts reports whether any document is a product page, from the
// partial index documents_product.
func (db *DB) HasProducts(ctx context.Context) (bool, error) {
	var n int
	if err := db.readRow(ctx, `SELECT EXISTS (SELECT 1 FROM documents WHERE product <> '')`).Scan(&n); err != nil {
		return false, fmt.Errorf("store: has products: %w", err)
	}
	return n == 1, nil
}

// Languages lists the distinct document languages, "" for pages that
// state none. It reads the index documents_lang alone.
func (db *DB) Languages(ctx context.Context) ([]string, error) {
	rows, err := db.readRows(ctx, `SELECT DISTINCT lang FROM documents ORDER BY lang`)
	if err != nil {
		return nil, fmt.Errorf("store: languages: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			return nil, fmt.Errorf("store: languages: %w", err)
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: languages: %w", err)
	}
	return out, nil
}
