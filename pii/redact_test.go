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
		// A question that quotes an address keeps it; its phone number goes.
		{"call 0171 5550143 about http://127.0.0.1:8120/2025/03/15/freshra25a06g/ please",
			"call [phone] about http://127.0.0.1:8120/2025/03/15/freshra25a06g/ please"},
		{"is https://shop.test/order/73914622 mine? +49 30 1234567", "is https://shop.test/order/[number] mine? [phone]"},
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
		// The site's own address and the dates of its permalinks are not
		// a phone number, read together or apart.
		{"http://127.0.0.1:8120/2025/03/15/freshra25a06g/", "http://127.0.0.1:8120/2025/03/15/freshra25a06g/"},
		{"https://shop.test:8443/events/2025-03-15/?p=4711#day-2", "https://shop.test:8443/events/2025-03-15/?p=4711#day-2"},
		{"http://[::1]:8787/2024/12/31/", "http://[::1]:8787/2024/12/31/"},
		// What a visitor wrote into one is still cut, wherever it is.
		{"http://127.0.0.1:8120/2025/03/15/?phone=0171%205550143", "http://127.0.0.1:8120/2025/03/15/?phone=[phone]"},
		{"https://shop.test/call-0171-5550143/", "https://shop.test/call-[phone]/"},
		{"https://shop.test/0171/5550143/", "https://shop.test/0171/[number]/"},
		{"https://shop.test/#from-jane@example.com", "https://shop.test/#[email]"},
		{"https://jane:0171-555-0143@shop.test:8080/", "https://jane:[phone]@shop.test:8080/"},
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
