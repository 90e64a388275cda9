package daemon

import (
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// The end-to-end tests judge replies with this oracle rather than with the
// chat package's validator: a test that asks the code under test whether it
// behaved only proves the code agrees with itself. It matches cues in word
// windows, deliberately broader than the validator, and shares none of its
// patterns. Unlike the validator it spares no other site's page: every
// gate asks about this site.

// A cue is a sequence of words; a word ending in "*" matches any word with
// that prefix.
var (
	pasteCues = []string{"paste", "pasting", "pasted", "pastes", "copypaste"}

	// Who is asked: a reply that asks for content addresses the user or names
	// itself as the recipient.
	requestCues = []string{"you", "your", "please", "me", "us", "mind", "kindly", "could", "would", "can"}

	transferCues = []string{
		"share*", "send*", "sent", "provid*", "give", "giving", "gave", "upload*",
		"forward*", "drop*", "put", "putting", "type", "typing", "enter", "attach*",
		"includ*", "copy", "copying", "transcrib*", "tell me", "read me", "show me",
		"let me know", "fill me in",
	}

	contentCues = []string{
		"text", "texts", "content", "contents", "wording", "words", "excerpt*",
		"transcript*", "screenshot*", "passage*", "body", "copy of", "a copy",
		"what it says", "what it said", "what the page says", "what the article says",
		"what the post says", "what that page says", "what's on it", "what is on it",
		"what's written", "what is written", "what it contains",
	}

	firstPersonCues = []string{"i", "i'm", "im", "i've", "i'd", "i'll", "me", "my", "myself"}

	inabilityCues = []string{
		"can't", "cant", "cannot", "can not", "unable", "not able", "no way", "no means",
		"no access", "without access", "don't have", "do not have", "doesn't allow",
		"lack*", "couldn't", "could not", "won't be able", "will not be able",
		"not possible", "isn't possible", "impossible", "not allowed", "not permitted",
		"beyond", "no ability", "no capability",
	}

	accessCues = []string{
		"open*", "read", "reading", "view*", "access*", "brows*", "visit*", "load*",
		"fetch*", "retriev*", "reach", "follow", "click*", "look at", "go to",
		"navigate*", "internet", "web access", "see the", "see that", "see it",
		"see links", "see urls", "see pages", "see web*", "see external",
	}
)

// quoted spans are the page's words, not the reply's own request.
var reOracleQuoted = regexp.MustCompile(`“[^”]*”|"[^"]*"|«[^»]*»|„[^“”]*[“”]`)

// asksForPageContent judges a reply as a reader would: does it ask the user
// to paste, send or share what a page says, or claim the assistant cannot
// open, read or access a page.
func asksForPageContent(reply string) bool {
	text := reOracleQuoted.ReplaceAllString(reply, " ")
	text = strings.NewReplacer("’", "'", "‘", "'", "copy-paste", "copypaste", "copy & paste", "copypaste").Replace(strings.ToLower(text))
	for _, s := range oracleSentences(text) {
		w := oracleWords(s)
		if len(cueSpans(w, pasteCues)) > 0 {
			return true
		}
		// a request, then within a few words something to transfer, then
		// what would be transferred
		if len(cueSpans(w, requestCues)) > 0 && followedWithin(w, transferCues, contentCues, 8) {
			return true
		}
		// the assistant itself, unable, to reach a page
		for _, fp := range cueSpans(w, firstPersonCues) {
			if followedWithin(w[fp.start:min(len(w), fp.end+10)], inabilityCues, accessCues, 6) {
				return true
			}
		}
		// "that page is inaccessible to me", "browsing isn't something I can do"
		if len(cueSpans(w, firstPersonCues)) > 0 && len(cueSpans(w, []string{"inaccessible", "not accessible", "isn't accessible", "isn't something i can", "is not something i can"})) > 0 {
			return true
		}
	}
	return false
}

// oracleSentences splits on sentence ends and on clause breaks that change
// the subject, so cues from two unrelated clauses are not joined.
func oracleSentences(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(".!?;:\n", r) })
}

// oracleWords keeps letters, digits and apostrophes together.
func oracleWords(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
	})
}

// span is where a cue matched in a list of words: words[start:end].
type span struct{ start, end int }

// cueSpans finds every match of any cue in words.
func cueSpans(words []string, cues []string) []span {
	var out []span
	for i := range words {
		for _, c := range cues {
			cw := strings.Fields(c)
			if i+len(cw) > len(words) {
				continue
			}
			ok := true
			for j, x := range cw {
				if p, star := strings.CutSuffix(x, "*"); star {
					ok = ok && strings.HasPrefix(words[i+j], p)
				} else {
					ok = ok && words[i+j] == x
				}
			}
			if ok {
				out = append(out, span{i, i + len(cw)})
			}
		}
	}
	return out
}

// followedWithin reports whether a cue of first is followed by a cue of
// then starting at most n words after it.
func followedWithin(words []string, first, then []string, n int) bool {
	seconds := cueSpans(words, then)
	for _, a := range cueSpans(words, first) {
		for _, b := range seconds {
			if b.start >= a.end && b.start-a.end <= n {
				return true
			}
		}
	}
	return false
}

func TestPasteOracle(t *testing.T) {
	for _, tc := range []struct {
		reply string
		want  bool
	}{
		{"Would you mind dropping the article's text into this chat?", true},
		{"I have no way to view that URL.", true},
		{"If you share what it says I'll summarize it.", true},
		{"Unfortunately, links are something I lack the means to open.", true},
		{"As a language model I don't have browsing access, so I can only go on what you tell me.", true},
		{"Mind sending over the wording of that post?", true},
		{"I’m unable to load external links from here.", true},
		{"Copy-paste the section and I'll take a look.", true},
		{"Could you tell me what the page says? Then I can help.", true},
		{"That page is inaccessible to me right now.", true},
		{"Kindly put the contents of the page below.", true},
		{"I'm not able to go to websites, sorry.", true},
		{"I couldn't read enough of the site to answer that.", true},
		{"You can read more on the pricing page.", false},
		{"Share this post with a friend.", false},
		{"The workshop opens at ten. Write to us by email.", false},
		{"I read the page: it says refunds take five days.", false},
		{"I can't find a refund policy anywhere on this site.", false},
		{"Send us your booking by email and we will confirm it.", false},
		{"The post's text explains how to harden PHP-FPM pools.", false},
		{"Open the Settings page and click Save.", false},
		{"I can't see a refund policy on the pricing page; the FAQ says nothing about one.", false},
		{"The page says: “Paste the key into wp-config.php and reload.”", false},
		{"I have no answer to that from this site's pages.", false},
	} {
		if got := asksForPageContent(tc.reply); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.reply, got, tc.want)
		}
	}
}
