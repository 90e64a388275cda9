package extract

import "testing"

func TestNoindex(t *testing.T) {
	for _, c := range []struct {
		name, html, header string
		want               bool
	}{
		{"yoast", `<html><head><meta name='robots' content='noindex, follow' /></head><body>x</body></html>`, "", true},
		{"rank math", `<html><head><meta name="robots" content="follow, noindex"/></head><body></body></html>`, "", true},
		{"none", `<head><META NAME="ROBOTS" CONTENT="NONE"></head>`, "", true},
		{"googlebot", `<head><meta name="googlebot" content="noindex"></head>`, "", true},
		{"index", `<head><meta name="robots" content="index, follow, max-image-preview:large"></head>`, "", false},
		{"other bot", `<head><meta name="bingbot" content="noindex"></head>`, "", false},
		{"in body", `<head></head><body><meta name="robots" content="noindex"><p>noindex</p></body>`, "", false},
		{"header", `<head></head>`, "noindex, nofollow", true},
		{"header for a bot", `<head></head>`, "googlebot: noindex", true},
		{"header index", `<head></head>`, "max-snippet:-1", false},
		{"broken", `<head><meta name="robots" content=`, "", false},
	} {
		if got := Noindex([]byte(c.html), c.header); got != c.want {
			t.Errorf("%s: Noindex = %v, want %v", c.name, got, c.want)
		}
	}
}
