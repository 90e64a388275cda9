package tool

import (
	"context"
	"strings"
	"sync"

	"github.com/askwp/askwpd/analysis"
	"github.com/askwp/askwpd/search"
)

// detectLangs are the languages a query's language is told among: those
// with a stopword list in analysis and many WordPress sites.
var detectLangs = []string{"en", "fr", "de", "es", "it", "nl", "pt"}

// detectLang names the language a query is written in, by its stopwords,
// or "" when that is not clear: at least two of the query's words must
// be one language's stopwords, and more than any other's. Product
// searches of bare nouns ("blue mug") say nothing, and stay "".
func detectLang(text string) string {
	var words []string
	for _, w := range analysis.SurfaceWords(text) {
		// Elided articles: "l'article", "dell'anno", "d'un".
		for _, part := range strings.FieldsFunc(w, func(r rune) bool { return r == '\'' || r == '’' }) {
			words = append(words, strings.ToLower(part))
		}
	}
	best, bestN, second := "", 0, 0
	for _, l := range detectLangs {
		n := 0
		for _, w := range words {
			if analysis.IsStopword(l, w) {
				n++
			}
		}
		switch {
		case n > bestN:
			best, bestN, second = l, n, bestN
		case n > second:
			second = n
		}
	}
	if bestN < 2 || bestN == second {
		return ""
	}
	return best
}

// primaryLang is a language tag's language: "fr" of "fr-FR".
func primaryLang(tag string) string {
	tag = strings.ToLower(strings.TrimSpace(tag))
	if i := strings.IndexAny(tag, "-_"); i >= 0 {
		tag = tag[:i]
	}
	return tag
}

// iso6391 are the ISO 639-1 language codes.
var iso6391 = func() map[string]bool {
	m := map[string]bool{}
	for _, c := range strings.Fields(`aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu
		cv cy da de dv dz ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz ia id ie
		ig ii ik io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo lt lu lv mg mh mi mk ml
		mn mr ms mt my na nb nd ne ng nl nn no nr nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd se sg si
		sk sl sm sn so sq sr ss st su sv sw ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi yo
		za zh zu`) {
		m[c] = true
	}
	return m
}()

// knownLang accepts an ISO 639-1 code, optionally with subtags (pt-BR,
// zh-Hant-TW).
func knownLang(tag string) bool {
	parts := strings.FieldsFunc(strings.TrimSpace(tag), func(r rune) bool { return r == '-' || r == '_' })
	if len(parts) == 0 || !iso6391[strings.ToLower(parts[0])] {
		return false
	}
	for _, p := range parts[1:] {
		if len(p) < 2 || len(p) > 8 {
			return false
		}
		for _, r := range p {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				return false
			}
		}
	}
	return len(parts) == strings.Count(tag, "-")+strings.Count(tag, "_")+1
}

// searchLang is the search, with the pages in lang (else the query's
// language, when clear) ranked first where the site has several
// languages. A strict language filter leaves nothing to prefer.
func (s *Service) searchLang(ctx context.Context, slot Slot, q search.Query, lang string) (*search.Result, error) {
	if lang == "" {
		lang = detectLang(q.Text)
	}
	lang = primaryLang(lang)
	if lang == "" || q.Filters.Lang != "" {
		return s.search(ctx, slot, q)
	}
	ok, err := s.siteHas(ctx, lang)
	if err != nil {
		return nil, err
	}
	if !ok {
		return s.search(ctx, slot, q)
	}
	return s.preferLang(ctx, slot, q, lang)
}

// siteLangs caches, until the next index commit, the languages of the
// site's documents and whether any is a product page: every search asks,
// and on most sites the answer is one language and no products.
type siteLangs struct {
	mu       sync.Mutex
	valid    bool
	langs    map[string]bool // primary languages; "" for pages that state none
	products bool
}

func (c *siteLangs) committed() {
	c.mu.Lock()
	c.valid = false
	c.mu.Unlock()
}

// siteHas reports, for lang "", whether the site has product pages, and
// otherwise whether it has pages in lang and pages in others: only then
// does preferring lang change a ranking.
func (s *Service) siteHas(ctx context.Context, lang string) (bool, error) {
	c := &s.langs
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.valid {
		ls, err := s.Store.Languages(ctx)
		if err != nil {
			return false, err
		}
		c.langs = map[string]bool{}
		for _, l := range ls {
			c.langs[primaryLang(l)] = true
		}
		if c.products, err = s.Store.HasProducts(ctx); err != nil {
			return false, err
		}
		c.valid = true
	}
	if lang == "" {
		return c.products, nil
	}
	return c.langs[lang] && len(c.langs) > 1, nil
}

// preferLang searches for the pages in lang, then all of them, and ranks
// the first ahead: a visitor reads their language first, and a page only
// another language has is still found. The confidence and action are the
// first's when it found anything.
func (s *Service) preferLang(ctx context.Context, slot Slot, q search.Query, lang string) (*search.Result, error) {
	in := q
	in.Filters.Lang = lang
	first, err := s.search(ctx, slot, in)
	if err != nil {
		return nil, err
	}
	all, err := s.search(ctx, slot, q)
	if err != nil || len(first.Hits) == 0 {
		return all, err
	}
	merged := *first
	merged.Hits = append([]search.Hit(nil), first.Hits...)
	seen := map[int64]bool{}
	for i := range merged.Hits {
		seen[merged.Hits[i].ChunkID] = true
		merged.Hits[i].MatchExplain = append(merged.Hits[i].MatchExplain, "in the query's language ("+lang+")")
	}
	// One search's worth of hits, as many as either returned.
	limit := max(len(first.Hits), len(all.Hits))
	for _, h := range all.Hits {
		if len(merged.Hits) >= limit {
			break
		}
		if !seen[h.ChunkID] && !sameDoc(merged.Hits, h, q.Passages) {
			merged.Hits = append(merged.Hits, h)
		}
	}
	return &merged, nil
}

// sameDoc reports a hit of a document already shown, outside passage
// mode, where a document is one card.
func sameDoc(hs []search.Hit, h search.Hit, passages bool) bool {
	if passages {
		return false
	}
	for _, x := range hs {
		if x.DocID == h.DocID {
			return true
		}
	}
	return false
}
