// Package pii cuts what would say who a visitor is from what they typed,
// wherever it is kept: the question log, and the daemon's own log lines.
package pii

import (
	"net/url"
	"regexp"
	"strings"
)

// What Redact replaces. A question is kept for what it asks, never for
// who asked it: contact details and account, order or card numbers are
// cut before the question is stored or logged.
var (
	reEmail = regexp.MustCompile(`(?i)[a-z0-9._%+\-]+@[a-z0-9\-]+(\.[a-z0-9\-]+)*\.[a-z]{2,}`)
	// A phone number: digits with the separators people write in them,
	// at least 7 digits in all (checked in Redact), optionally after a +.
	rePhone = regexp.MustCompile(`\+?\(?\d[\d\s().\-/]{5,}\d`)
	// Any run of 6 or more digits that is left: a card, account or order
	// number. Years (4 digits) and postal codes of 5 stay readable.
	reDigits = regexp.MustCompile(`\d{6,}`)
	// Dates written with dashes or slashes are not phone numbers.
	reDate = regexp.MustCompile(`^\d{4}[-/]\d{1,2}[-/]\d{1,2}$|^\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}$`)
)

// Redact replaces emails, phone numbers and long digit runs in s with
// [email], [phone] and [number]. A web address in s is redacted as
// RedactURL does, so its port and the dates in its path stay.
func Redact(s string) string {
	// Most questions hold neither an @ nor six digits: a byte scan
	// spares them the regular expressions (this runs at every search).
	if strings.IndexByte(s, '@') >= 0 {
		s = reEmail.ReplaceAllString(s, "[email]")
	}
	if digits(s) < 6 {
		return s // a phone has 7 digits, a number 6
	}
	if !strings.Contains(s, "://") {
		return redactText(s)
	}
	var b strings.Builder
	last := 0
	for _, m := range reURL.FindAllStringIndex(s, -1) {
		b.WriteString(redactText(s[last:m[0]]))
		b.WriteString(redactURL(s[m[0]:m[1]]))
		last = m[1]
	}
	b.WriteString(redactText(s[last:]))
	return b.String()
}

// redactText is Redact for text with its emails already replaced.
func redactText(s string) string {
	if digits(s) < 6 {
		return s
	}
	s = rePhone.ReplaceAllStringFunc(s, func(m string) string {
		// The match may end in spaces or brackets taken as separators;
		// keep what is not part of the number.
		core := strings.TrimRight(m, " ()./-")
		// A bare run of digits is a number, not a phone (reDigits).
		if reDate.MatchString(strings.TrimLeft(core, "+(")) || digits(core) < 7 || digits(core) == len(core) {
			return m
		}
		return "[phone]" + m[len(core):]
	})
	return reDigits.ReplaceAllString(s, "[number]")
}

func digits(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			n++
		}
	}
	return n
}

// RedactURL is Redact for a URL a visitor's words may have reached: a
// search or a form's fields in its query, often percent-encoded
// ("jane%40example.com"). Each part of the query is decoded before it is
// redacted, and kept decoded: the URL is for reading in a log, not for
// fetching. The host and port are the site's, and each segment of the
// path is redacted alone: read as one run of digits,
// 127.0.0.1:8120/2025/03/15/ was a phone number.
func RedactURL(s string) string { return redactURL(s) }

// reURL finds web addresses in text, up to a space or a quote.
var reURL = regexp.MustCompile(`(?i)\bhttps?://[^\s<>"'` + "`" + `]+`)

func redactURL(s string) string {
	rest, frag, hasFrag := strings.Cut(s, "#")
	rest, query, hasQuery := strings.Cut(rest, "?")
	var b strings.Builder
	path := rest
	if i := strings.Index(rest, "://"); i > 0 && !strings.ContainsAny(rest[:i], "/.") {
		auth := rest[i+3:]
		path = ""
		if j := strings.IndexByte(auth, '/'); j >= 0 {
			auth, path = auth[:j], auth[j:]
		}
		b.WriteString(rest[:i+3])
		if user, host, ok := strings.Cut(auth, "@"); ok {
			b.WriteString(Redact(user) + "@")
			auth = host
		}
		// A port has at most 5 digits; a longer run in a host name is
		// a number like any other.
		b.WriteString(reDigits.ReplaceAllString(auth, "[number]"))
	}
	for i, seg := range strings.Split(path, "/") {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(Redact(seg))
	}
	if hasQuery {
		parts := strings.Split(query, "&")
		for i, p := range parts {
			if d, err := url.QueryUnescape(p); err == nil {
				p = d
			}
			parts[i] = Redact(p)
		}
		b.WriteString("?" + strings.Join(parts, "&"))
	}
	if hasFrag {
		b.WriteString("#" + Redact(frag))
	}
	return b.String()
}
