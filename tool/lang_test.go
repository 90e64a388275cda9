package tool

import "testing"

func TestDetectLang(t *testing.T) {
	for q, want := range map[string]string{
		"Quelle est votre politique de retour pour les articles ?": "fr",
		"Puis-je retourner une pièce et être remboursé ?":          "fr",
		"Wie lange dauert die Lieferung nach Österreich?":          "de",
		"¿Cuál es la política de devoluciones de la tienda?":       "es",
		"Qual è il costo della spedizione per l'Italia?":           "it",
		"Hoe lang duurt de levering naar België?":                  "nl",
		"Qual é o prazo de entrega para o Brasil?":                 "pt",
		"what is the returns policy for the mugs":                  "en",
		"blue mug":            "", // bare nouns say nothing
		"nginx fastcgi_cache": "",
		"Kiln & Co":           "",
	} {
		if got := detectLang(q); got != want {
			t.Errorf("detectLang(%q) = %q, want %q", q, got, want)
		}
	}
}

func TestKnownLang(t *testing.T) {
	for tag, want := range map[string]bool{
		"en": true, "fr": true, "pt-BR": true, "zh-Hant-TW": true, "de_DE": true,
		"xx": false, "": false, "english": false, "fr-": false, "en--US": false, "fr-FR!": false,
	} {
		if got := knownLang(tag); got != want {
			t.Errorf("knownLang(%q) = %v, want %v", tag, got, want)
		}
	}
}

// BenchmarkDetectLang is the cost every search_site call without a lang
// pays: a SciFact claim's length.
func BenchmarkDetectLang(b *testing.B) {
	q := "0-dimensional biomaterials show inductive properties when combined with stem cells from the bone marrow of adult mice"
	for i := 0; i < b.N; i++ {
		detectLang(q)
	}
}
