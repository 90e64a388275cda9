package search

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/askwp/askwpd/internal/testsite"
	"github.com/askwp/askwpd/store"
)

// TestSearch_WholePage: the whole page's score is added and explained,
// and a page named by its URL outranks one that only mentions the word
// as often.
func TestSearch_WholePage(t *testing.T) {
	db := openTB(t)
	ctx := context.Background()
	docs := []*store.Document{
		testsite.Page("/guides/how-it-works/", "How it works",
			"First register your plugin with registerPlugin.",
			"Then add a coupon field to the checkout.",
			"Styling is optional."),
		testsite.Page("/shop/returns/", "Returns", "A coupon refunds the shipping of the parcel you send back."),
		testsite.Page("/shop/coupons/", "Discounts", "A coupon code takes ten percent off the cart at checkout."),
	}
	// Filler pages give the words their IDF.
	docs = append(docs, diaryPages()...)
	if err := db.PutDocuments(ctx, docs); err != nil {
		t.Fatal(err)
	}
	ix := newIndex(t, db)
	search := func(q string, docWeight, urlWeight float64) map[string]Hit {
		rk := DefaultRanking()
		rk.DocWeight, rk.URLWeight, rk.TitlePhraseBonus = docWeight, urlWeight, 0
		ix.SetRanking(rk)
		res, err := ix.Search(ctx, Query{Text: q, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]Hit{}
		for i, h := range res.Hits {
			h.Score = float64(len(res.Hits) - i) // rank, reversed
			out[strings.TrimPrefix(h.URL, "http://x.test")] = h
			if (docWeight > 0) != strings.Contains(strings.Join(h.MatchExplain, "; "), "whole page ") {
				t.Errorf("DocWeight %v %q: %s explains %q", docWeight, q, h.URL, h.MatchExplain)
			}
		}
		return out
	}
	t.Run("URL", func(t *testing.T) {
		// Two equal mentions of "coupon": the page whose URL names coupons
		// comes first once the URL counts.
		for _, urlWeight := range []float64{0, 1} {
			hits := search("coupon", 0.4, urlWeight)
			page, other := hits["/shop/coupons/"], hits["/shop/returns/"]
			if page.URL == "" || other.URL == "" {
				t.Fatalf("URLWeight %v: hits %v, want both shop pages", urlWeight, hits)
			}
			if (urlWeight > 0) != (page.Score > other.Score) {
				t.Errorf("URLWeight %v: /shop/coupons/ ranks below /shop/returns/ = %v", urlWeight, page.Score < other.Score)
			}
		}
		if hits := search("coupon", 0, 1); len(hits) == 0 {
			t.Error("no hits without the whole-page score")
		}
	})
}

// TestSearch_Associate: a page named by what the query does not say
// ("Spinner" for "loading") rises when the site's other pages say the
// two together, and a page whose name they never mention is untouched.
func TestSearch_Associate(t *testing.T) {
	db := openTB(t)
	ctx := context.Background()
	docs := []*store.Document{
		testsite.Page("/components/spinner/", "Spinner", "Spinner is a component that shows work in progress."),
		testsite.Page("/components/badge/", "Badge", "Badge is a component that shows a small count."),
		testsite.Page("/tutorials/list-posts/", "List posts", "Fetch the posts.", "Show a spinner while the posts are loading."),
		testsite.Page("/tutorials/edit-form/", "Edit form", "Save the form.", "A spinner tells the user the record is loading."),
	}
	docs = append(docs, diaryPages()...)
	if err := db.PutDocuments(ctx, docs); err != nil {
		t.Fatal(err)
	}
	ix := newIndex(t, db)
	scores := func(weight float64) map[string]float64 {
		rk := DefaultRanking()
		rk.AssocWeight = weight
		ix.SetRanking(rk)
		res, err := ix.Search(ctx, Query{Text: "loading component", Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, h := range res.Hits {
			out[strings.TrimPrefix(h.URL, "http://x.test")] = h.Score
		}
		return out
	}
	off, on := scores(0), scores(4)
	spinner, badge := "/components/spinner/", "/components/badge/"
	if off[spinner] == 0 || off[badge] == 0 {
		t.Fatalf("hits without associations %v, want both component pages", off)
	}
	if on[spinner] <= off[spinner] {
		t.Errorf("Spinner scores %v with associations, %v without: want higher", on[spinner], off[spinner])
	}
	if on[badge] != off[badge] {
		t.Errorf("Badge scores %v with associations, %v without: want the same", on[badge], off[badge])
	}
	if on[spinner] <= on[badge] {
		t.Errorf("with associations Spinner scores %v, Badge %v: want Spinner first", on[spinner], on[badge])
	}
}

// TestSearch_IntroBoost: of two pages that say the same in two sections,
// the one that says it before its first heading ranks first; a page
// without headings has no introduction.
func TestSearch_IntroBoost(t *testing.T) {
	db := openTB(t)
	ctx := context.Background()
	page := func(url, title string, intro, section string, headed bool) *store.Document {
		d := testsite.Page(url, title, intro, section)
		d.Chunks[0].HeadingPath = nil
		if !headed {
			d.Chunks[1].HeadingPath = nil
		}
		return d
	}
	docs := []*store.Document{
		page("/a/", "Shop notes", "Parcels ship within two days.", "A coupon code takes ten percent off.", true),
		page("/b/", "Shop notes", "A coupon code takes ten percent off.", "Parcels ship within two days.", true),
		page("/c/", "Shop notes", "A coupon code takes ten percent off.", "Parcels ship within two days.", false),
	}
	docs = append(docs, diaryPages()...)
	if err := db.PutDocuments(ctx, docs); err != nil {
		t.Fatal(err)
	}
	ix := newIndex(t, db)
	scores := map[float64]map[string]float64{}
	for _, boost := range []float64{0, 0.25} {
		rk := DefaultRanking()
		rk.IntroBoost = boost
		ix.SetRanking(rk)
		res, err := ix.Search(ctx, Query{Text: "coupon code", Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		scores[boost] = map[string]float64{}
		for _, h := range res.Hits {
			u := strings.TrimPrefix(h.URL, "http://x.test")
			scores[boost][u] = h.Score
			intro := strings.Contains(strings.Join(h.MatchExplain, "; "), "introduction")
			if intro != (boost > 0 && u == "/b/") {
				t.Errorf("IntroBoost %v: %s explains %q", boost, u, h.MatchExplain)
			}
		}
		if len(scores[boost]) != 3 {
			t.Fatalf("IntroBoost %v: hits %v, want the three shop pages", boost, urls(res.Hits))
		}
	}
	off, on := scores[0], scores[0.25]
	if on["/a/"] != off["/a/"] || on["/c/"] != off["/c/"] || !(on["/b/"] > off["/b/"]) {
		t.Errorf("scores without the boost %v, with it %v: want only /b/ (its introduction) raised", off, on)
	}
	if !(on["/b/"] > on["/a/"] && on["/b/"] > on["/c/"]) {
		t.Errorf("scores with the boost %v: want /b/ first", on)
	}
}

// diaryPages are 20 filler pages, which give the words of the pages under
// test their IDF.
func diaryPages() []*store.Document {
	var docs []*store.Document
	for i := 0; i < 20; i++ {
		docs = append(docs, testsite.Page(fmt.Sprintf("/blog/diary-%d/", i), fmt.Sprintf("Garden diary %d", i),
			"Roses and tulips in the garden this week."))
	}
	return docs
}

// TestSearch_WholePageAfterChanges: the whole-page score's counts of
// pages per term, and its pages' URL terms, are kept between searches;
// after pages are added, and then replaced and removed, a search scores as
// an index read afresh from the store does.
func TestSearch_WholePageAfterChanges(t *testing.T) {
	db := openTB(t)
	ctx := context.Background()
	// "voucher" is only in a URL at first: no term of the index.
	docs := append(diaryPages(),
		testsite.Page("/shop/vouchers/", "Discounts", "A coupon code takes ten percent off the cart.", "Coupon codes expire."),
		testsite.Page("/shop/returns/", "Returns", "A coupon refunds the shipping of the parcel you send back."),
		testsite.Page("/help/checkout/", "Checkout", "Type the coupon at checkout."))
	if err := db.PutDocuments(ctx, docs); err != nil {
		t.Fatal(err)
	}
	live := newIndex(t, db)
	const q = "voucher coupon checkout garden"
	wholePage := func(ix *Index) map[string]string {
		t.Helper()
		res, err := ix.Search(ctx, Query{Text: q, Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, h := range res.Hits {
			out[h.URL] = strings.Join(h.MatchExplain, "; ")
		}
		return out
	}
	same := func(step string) map[string]string {
		t.Helper()
		got, want := wholePage(live), wholePage(newIndex(t, db))
		if len(got) != len(want) {
			t.Fatalf("%s: live index: %d hits, afresh: %d", step, len(got), len(want))
		}
		for u, w := range want {
			if got[u] != w {
				t.Errorf("%s: %s: live index explains %q, afresh %q", step, u, got[u], w)
			}
		}
		return got
	}
	before := same("at first") // and the caches are filled
	// Pages added, none removed: each term has more postings.
	for _, d := range []*store.Document{
		testsite.Page("/help/garden-coupon/", "Garden coupons", "A garden coupon at checkout."),
		testsite.Page("/help/gifts/", "Gifts", "A voucher is a coupon someone gave you."),
	} {
		if _, err := db.PutDocument(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	added := same("after additions")
	if added["http://x.test/shop/vouchers/"] == before["http://x.test/shop/vouchers/"] {
		t.Errorf("the page whose URL names vouchers scores as before: %q", added["http://x.test/shop/vouchers/"])
	}
	// A page goes, one is replaced, another moves.
	if _, err := db.DeleteDocument(ctx, "http://x.test/shop/returns/"); err != nil {
		t.Fatal(err)
	}
	for _, d := range []*store.Document{
		testsite.Page("/coupon-returns/", "Returns", "A coupon refunds the shipping of the parcel you send back."),
		testsite.Page("/blog/diary-3/", "Garden diary 3", "Coupon season in the garden."),
	} {
		if _, err := db.PutDocument(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	same("after removals")
}
