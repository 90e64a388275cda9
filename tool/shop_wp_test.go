package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/askwp/askwpd/internal/wptest"
	"github.com/askwp/askwpd/tool"
)

// The shop and language tests run on a test WordPress of their own, with
// the fixture mu-plugins of scripts/fixtures installed and seeded:
//
//	ASKWPD_SITE_NAME=shop ASKWPD_WP_STATE=$PWD/.wp-shop bash scripts/wp-up.sh --quiet
//
// ASKWPD_TEST_SHOP_ENV names its env file (default .wp-shop/env). Without
// the site these tests skip, except when ASKWPD_TEST_SHOP_ENV is set in
// CI: the step that set it brought the site up.

var (
	shopOnce sync.Once
	shopSvc  *tool.Service
	shopErr  error
)

func shopSite(t *testing.T) *tool.Service {
	t.Helper()
	path, asked := os.LookupEnv("ASKWPD_TEST_SHOP_ENV")
	if !asked {
		path = filepath.Join(wptest.RepoRoot(), ".wp-shop", "env")
	}
	site, err := wptest.OpenFile(path)
	if err != nil {
		if asked && os.Getenv("CI") != "" {
			t.Fatalf("the shop test WordPress is not up (%v)", err)
		}
		t.Skipf("the shop test WordPress is not up (%v); run ASKWPD_SITE_NAME=shop ASKWPD_WP_STATE=$PWD/.wp-shop bash scripts/wp-up.sh", err)
	}
	site.Lock(t)
	shopOnce.Do(func() {
		if shopErr = installFixtures(site); shopErr != nil {
			return
		}
		site.PHP(t, `askwpd_fixture_shop_seed(); askwpd_fixture_lang_seed();`)
		shopSvc, shopErr = openIndexed(site)
	})
	if shopErr != nil {
		t.Fatal(shopErr)
	}
	return shopSvc
}

// installFixtures copies the fixture mu-plugins into the site.
func installFixtures(site *wptest.Site) error {
	dir := filepath.Join(site.Env["WP_CONTENT_DIR"], "mu-plugins")
	for _, name := range []string{"shop-woo.php", "lang-polylang.php"} {
		b, err := os.ReadFile(filepath.Join(wptest.RepoRoot(), "scripts", "fixtures", name))
		if err != nil {
			return err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "askwpd-fixture-"+name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func resultPath(e tool.Evidence) string {
	if i := strings.Index(e.URL, "://"); i >= 0 {
		if j := strings.IndexByte(e.URL[i+3:], '/'); j >= 0 {
			return e.URL[i+3+j:]
		}
	}
	return e.URL
}

func paths(r tool.SearchResponse) []string {
	var out []string
	for _, e := range r.Results {
		out = append(out, resultPath(e)+" "+e.Lang)
	}
	return out
}

func TestShop_BlueMugUnder20InStock(t *testing.T) {
	svc := shopSite(t)
	var r tool.SearchResponse
	call(t, svc, "search_site", map[string]any{"query": "blue mug under 20 in stock",
		"filters": map[string]any{"in_stock": true, "price_max": 20}}, &r)
	t.Logf("results: %v", paths(r))
	if len(r.Results) == 0 || resultPath(r.Results[0]) != "/product/stoneware-mug/" {
		t.Fatalf("first result is not the stoneware mug: %v", paths(r))
	}
	p := r.Results[0].Product
	if p == nil || p.Price == nil || *p.Price != 15 || p.Currency != "USD" || p.InStock == nil || !*p.InStock ||
		p.Availability != "InStock" || p.SKU != "MUG-STONE-BLUE" || p.Name != "Stoneware Mug" {
		t.Fatalf("stoneware mug's product = %+v", p)
	}
	for _, e := range r.Results {
		// The filters are strict: the porcelain mug (24) and the camp
		// mug (out of stock) are blue mugs too.
		if e.Product == nil || e.Product.Price == nil || *e.Product.Price > 20 || e.Product.InStock == nil || !*e.Product.InStock {
			t.Errorf("%s passed the filters with product %+v", e.URL, e.Product)
		}
	}

	// Unfiltered, the same words find the blue mugs the filters left out.
	var all tool.SearchResponse
	call(t, svc, "search_site", map[string]any{"query": "blue mug"}, &all)
	var sawOut, sawDear bool
	for _, e := range all.Results {
		sawOut = sawOut || resultPath(e) == "/product/camp-mug/" && e.Product != nil && e.Product.InStock != nil && !*e.Product.InStock
		sawDear = sawDear || resultPath(e) == "/product/porcelain-mug/" && e.Product != nil && e.Product.Price != nil && *e.Product.Price == 24
	}
	if !sawOut || !sawDear {
		t.Errorf("unfiltered 'blue mug' = %v: want the out-of-stock camp mug and the 24 USD porcelain mug, with their product fields", paths(all))
	}

	// The variable mug is one product with its color options.
	var d tool.DocumentResponse
	call(t, svc, "get_document", map[string]any{"id_or_url": "/product/glazed-mug/"}, &d)
	if d.Product == nil || d.Product.Price == nil || *d.Product.Price != 19 || d.Product.HighPrice == nil || *d.Product.HighPrice != 21 ||
		len(d.Product.Options) != 1 || strings.Join(d.Product.Options[0].Values, ",") != "Red,Green,Yellow" {
		t.Errorf("glazed mug's product = %+v", d.Product)
	}
	// On sale: the price paid, and the regular price beside it.
	call(t, svc, "get_document", map[string]any{"id_or_url": "/product/serving-bowl/"}, &d)
	if d.Product == nil || d.Product.Price == nil || *d.Product.Price != 25 || d.Product.RegularPrice == nil || *d.Product.RegularPrice != 30 {
		t.Errorf("serving bowl's product = %+v", d.Product)
	}
}

func TestShop_BadInput(t *testing.T) {
	svc := shopSite(t)
	for _, tc := range []struct {
		name string
		args string
		want string
	}{
		{"negative price", `{"query": "mug", "filters": {"price_max": -1}}`, "price_max"},
		{"min above max", `{"query": "mug", "filters": {"price_min": 30, "price_max": 20}}`, "price_min (30) is above"},
		{"unknown language", `{"query": "mug", "lang": "xx"}`, `"xx" is not a language code`},
		{"price as text", `{"query": "mug", "filters": {"price_max": "twenty"}}`, "price_max"},
	} {
		_, err := svc.Call(context.Background(), "search_site", json.RawMessage(tc.args))
		var te *tool.Error
		if !errors.As(err, &te) || te.Code != "invalid" || !strings.Contains(te.Message, tc.want) {
			t.Errorf("%s: err = %v, want invalid mentioning %q", tc.name, err, tc.want)
		}
	}

	// "call us": a product with no price, never a made-up one, and no
	// price filter lets it through.
	var d tool.DocumentResponse
	call(t, svc, "get_document", map[string]any{"id_or_url": "/product/studio-kiln/"}, &d)
	if d.Product == nil || d.Product.Price != nil || d.Product.SKU != "KILN-STUDIO" {
		t.Errorf("studio kiln's product = %+v, want one with no price", d.Product)
	}
	var r tool.SearchResponse
	call(t, svc, "search_site", map[string]any{"query": "studio kiln", "filters": map[string]any{"price_min": 0}}, &r)
	for _, e := range r.Results {
		if resultPath(e) == "/product/studio-kiln/" {
			t.Errorf("the kiln (price 'call us') passed price_min 0: %+v", e.Product)
		}
	}
	// Broken JSON-LD: the page is indexed and found, with no product.
	call(t, svc, "search_site", map[string]any{"query": "glaze sampler tiles"}, &r)
	if len(r.Results) == 0 || resultPath(r.Results[0]) != "/product/glaze-sampler/" || r.Results[0].Product != nil {
		t.Errorf("glaze sampler (broken JSON-LD) = %v, product %+v", paths(r), firstProduct(r))
	}
}

func firstProduct(r tool.SearchResponse) any {
	if len(r.Results) == 0 {
		return nil
	}
	return r.Results[0].Product
}

func TestLang_FrenchQuestionFrenchPageFirst(t *testing.T) {
	svc := shopSite(t)
	var r tool.SearchResponse
	q := "Puis-je retourner une pièce Kiln & Co et être remboursé sous 30 jours ?"
	call(t, svc, "search_site", map[string]any{"query": q}, &r)
	t.Logf("results: %v", paths(r))
	if len(r.Results) == 0 || resultPath(r.Results[0]) != "/politique-de-retour/" || r.Results[0].Lang != "fr-FR" {
		t.Fatalf("first result of the French question is not the French page: %v", paths(r))
	}
	// Both French pages match, and both rank ahead of the pages in other
	// languages, which are still there.
	if n, first := langFirst(r, "fr"); n != 2 || !first {
		t.Errorf("French question: want the 2 French pages first, then the others: %v", paths(r))
	}
	var d tool.DocumentResponse
	call(t, svc, "get_document", map[string]any{"id_or_url": r.Results[0].URL}, &d)
	langs := map[string]string{}
	for _, tr := range d.Translations {
		langs[tr.Lang] = strings.TrimPrefix(tr.URL, svc.Crawler.Site.URL)
	}
	if d.Lang != "fr-FR" || langs["en-US"] != "/returns-policy/" || langs["de-DE"] != "/rueckgabe/" || len(langs) != 2 {
		t.Errorf("French page: lang %q, translations %v", d.Lang, d.Translations)
	}
}

func TestLang_ExplicitLang(t *testing.T) {
	svc := shopSite(t)
	q := "Kiln & Co stoneware 30"
	var base, de tool.SearchResponse
	call(t, svc, "search_site", map[string]any{"query": q, "lang": "en"}, &base)
	call(t, svc, "search_site", map[string]any{"query": q, "lang": "de"}, &de)
	t.Logf("lang en: %v", paths(base))
	t.Logf("lang de: %v", paths(de))
	if len(de.Results) == 0 || !strings.HasPrefix(de.Results[0].Lang, "de") {
		t.Fatalf("lang=de: first result is not German: %v", paths(de))
	}
	if len(base.Results) == 0 || strings.HasPrefix(base.Results[0].Lang, "de") {
		t.Fatalf("lang=en: first result is German: %v", paths(base))
	}
	// Preferred, not filtered: the other languages' pages are still there,
	// after the German ones.
	if n, first := langFirst(de, "de"); n != 2 || !first {
		t.Errorf("lang=de: want the 2 German pages first and the others after: %v", paths(de))
	}
}

// langFirst counts the results in lang and reports whether they all come
// before the others, of which there is at least one.
func langFirst(r tool.SearchResponse, lang string) (n int, first bool) {
	other := false
	first = true
	for _, e := range r.Results {
		if !strings.HasPrefix(e.Lang, lang) {
			other = true
			continue
		}
		n++
		if other {
			first = false
		}
	}
	return n, first && other
}
