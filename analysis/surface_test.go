package analysis

import (
	"reflect"
	"testing"
)

func TestSurfaceWords(t *testing.T) {
	got := SurfaceWords("How do I harden PHP-FPM pools on Debian 12? Version 3.5, O'Brien’s Café at Lindenstraße - e.g. wp_enqueue_script().")
	want := []string{"How", "do", "I", "harden", "PHP-FPM", "pools", "on", "Debian", "12", "Version", "3.5", "O'Brien’s",
		"Café", "at", "Lindenstraße", "e.g", "wp", "enqueue", "script"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("SurfaceWords:\n got %q\nwant %q", got, want)
	}
}

func TestIsStopword(t *testing.T) {
	for _, c := range []struct {
		lang, word string
		want       bool
	}{
		{"en", "The", true}, {"en", "plugin", false}, {"de", "und", true}, {"fr", "où", true},
		{"xx", "the", true}, // no list of its own: English's
	} {
		if got := IsStopword(c.lang, c.word); got != c.want {
			t.Errorf("IsStopword(%s, %s) = %v", c.lang, c.word, got)
		}
	}
}
