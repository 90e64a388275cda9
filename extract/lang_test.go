package extract

import (
	"reflect"
	"testing"
)

func TestLang_HreflangAndSwitcher(t *testing.T) {
	alternates := `<link rel="alternate" hreflang="en-US" href="https://site.test/returns/">
		<link rel="alternate" hreflang="fr-FR" href="https://site.test/fr/retours/">
		<link rel="alternate" hreflang="de-DE" href="/de/rueckgabe/">
		<link rel="alternate" hreflang="x-default" href="https://site.test/returns/">`
	switcher := `<ul><li class="lang-item lang-item-2 lang-item-en"><a href="/returns/">EN</a></li>
		<li class="lang-item lang-item-5 lang-item-fr current-lang"><a href="/fr/retours/">FR</a></li></ul>`
	tests := []struct {
		name, page, url, wantLang string
		want                      []Translation
	}{
		{name: "html lang wins; the other alternates are translations",
			page: `<html lang="fr-FR"><head>` + alternates + `</head><body><main><p>Retours</p></main></body></html>`,
			url:  "https://site.test/fr/retours/", wantLang: "fr-FR",
			want: []Translation{{"en-US", "https://site.test/returns/"}, {"de-DE", "https://site.test/de/rueckgabe/"}}},
		{name: "no html lang: the alternate naming the page itself",
			page: `<html><head>` + alternates + `</head><body><main><p>Rückgabe</p></main></body></html>`,
			url:  "https://site.test/de/rueckgabe/", wantLang: "de-DE",
			want: []Translation{{"en-US", "https://site.test/returns/"}, {"fr-FR", "https://site.test/fr/retours/"}}},
		{name: "no html lang, no alternates: Polylang's current switcher item",
			page: `<html><head></head><body>` + switcher + `<main><p>Retours</p></main></body></html>`,
			url:  "https://site.test/fr/retours/", wantLang: "fr"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := extractHTML(t, tt.page, tt.url)
			if res.Lang != tt.wantLang {
				t.Errorf("lang = %q, want %q", res.Lang, tt.wantLang)
			}
			if !reflect.DeepEqual(res.Translations, tt.want) {
				t.Errorf("translations = %v, want %v", res.Translations, tt.want)
			}
		})
	}
}
