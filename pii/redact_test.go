package pii

import (
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	cases := []struct{ in, want string }{
		{"mail me at jane.doe+shop@example.co.uk please", "mail me at [email] please"},
		{"JOHN_SMITH@Mail.Example.com", "[email]"},
		{"call +49 30 1234567 tomorrow", "call [phone] tomorrow"},
		{"my number is (555) 123-4567.", "my number is [phone]."},
		{"555.123.4567 or 555-123-4567", "[phone] or [phone]"},
		{"card 4111111111111111 declined", "card [number] declined"},
		{"order 12345678", "order [number]"},
		// What is not personal stays readable.
		{"opening hours in 2025", "opening hours in 2025"},
		{"events on 2025-01-03 and 03/01/2025", "events on 2025-01-03 and 03/01/2025"},
		{"postcode 10115, version 6.1.2, 3 cups", "postcode 10115, version 6.1.2, 3 cups"},
		{"php-fpm pool users", "php-fpm pool users"},
	}
	for _, c := range cases {
		if got := Redact(c.in); got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestRedactURL(t *testing.T) {
	cases := []struct{ in, want string }{
		{"https://shop.test/?s=refund+for+jane%40example.com&p=12", "https://shop.test/?s=refund for [email]&p=12"},
		{"/contact/?phone=0171%205550143#form", "/contact/?phone=[phone]#form"},
		{"https://shop.test/order/12345678/", "https://shop.test/order/[number]/"},
		// What is not personal stays as it was.
		{"https://shop.test/2025/01/coffee/", "https://shop.test/2025/01/coffee/"},
		{"/?p=4711&preview=true", "/?p=4711&preview=true"},
		{"/?q=100%", "/?q=100%"}, // not valid escaping: kept as written
	}
	for _, c := range cases {
		if got := RedactURL(c.in); got != c.want {
			t.Errorf("RedactURL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzRedact checks a property: no run of 7 digits survives, whatever
// separates them in a phone-like way, and no "@" between word characters.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{"a@b.cd", "+1 (555) 123 4567", "12-34-56-78", "x 1234567 y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Redact(s)
		run := 0
		for i := 0; i < len(out); i++ {
			if out[i] >= '0' && out[i] <= '9' {
				run++
				if run >= 6 {
					t.Fatalf("Redact(%q) = %q keeps a run of 6 digits", s, out)
				}
			} else {
				run = 0
			}
		}
		if reEmail.MatchString(out) {
			t.Fatalf("Redact(%q) = %q keeps an email", s, out)
		}
		if strings.Count(Redact(out), "[") != strings.Count(out, "[") {
			t.Fatalf("Redact is not idempotent on %q", out)
		}
	})
}
