// Package search is askwpd's retrieval engine. This file is a transitional
// facade over store while the engine moves out of it.
package search

import (
	"context"

	"github.com/askwp/askwpd/store"
)

type (
	Query       = store.SearchQuery
	Filters     = store.Filters
	Hit         = store.Hit
	Passage     = store.Passage
	Result      = store.SearchResult
	Ranking     = store.Ranking
	HybridQuery = store.HybridQuery
	Synonyms    = store.Synonyms
	Stats       = store.SearchIndexStats
	DocPassage  = store.DocPassage
)

// DefaultRanking is the ranking production uses.
func DefaultRanking() Ranking { return store.DefaultRanking() }

// LoadSynonyms reads a Solr-style synonyms file.
func LoadSynonyms(path string) (*Synonyms, error) { return store.LoadSynonyms(path) }

// Index searches one store.
type Index struct{ db *store.DB }

// New returns the search index of db. Load fills it.
func New(db *store.DB) *Index { return &Index{db: db} }

// Load reads the store into memory.
func (ix *Index) Load(ctx context.Context) error {
	if err := ix.db.EnsureIndex(ctx); err != nil {
		return err
	}
	return ix.db.LoadSearchIndex(ctx)
}

// Check compares the index with the store.
func (ix *Index) Check(ctx context.Context) (ok bool, inMemory, stored int, err error) {
	return ix.db.CheckSearchIndex(ctx)
}

// Stats reports the index's state.
func (ix *Index) Stats() Stats { return ix.db.SearchIndexStats() }

// SetSynonyms installs the site's synonym rules; nil removes them.
func (ix *Index) SetSynonyms(s *Synonyms) { ix.db.SetSynonyms(s) }

// SetRanking replaces the ranking parameters.
func (ix *Index) SetRanking(r Ranking) { ix.db.SetRanking(r) }

// Ranking returns the ranking parameters in use.
func (ix *Index) Ranking() Ranking { return ix.db.Ranking() }

// Search ranks the site's pages for q, fusing q.Hybrid's vectors in when set.
func (ix *Index) Search(ctx context.Context, q Query) (*Result, error) {
	return ix.db.SearchHybrid(ctx, q)
}

// SearchDocument finds the passages of one document that match text.
func (ix *Index) SearchDocument(ctx context.Context, docID int64, text, lang string, limit int) ([]DocPassage, []string, error) {
	return ix.db.SearchDocument(ctx, docID, text, lang, limit)
}

// Close frees the index.
func (ix *Index) Close() {}
