package chat

import (
	"reflect"
	"testing"
)

func TestChat_RetrievalDecision(t *testing.T) {
	for _, tc := range []struct {
		msg            string
		search, recent bool
	}{
		{"hi!", false, false},
		{"Thanks", false, false},
		{"What is the most recent blog post?", false, true},
		{"How much is the coffee subscription?", true, false},
		{"Summarize https://example.com/about/", true, false},
		{"What's new in 2026 about sourdough?", true, true},
		{"why?", false, false},
	} {
		search, recent, reasons := retrievalDecision(tc.msg, contentTerms(tc.msg))
		if search != tc.search || recent != tc.recent {
			t.Errorf("%q: search=%v recent=%v (%v), want %v %v", tc.msg, search, recent, reasons, tc.search, tc.recent)
		}
	}
}

func TestChat_RewriteQueries(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want []string
	}{
		{"Can you please tell me what the refund policy is?", []string{"refund policy"}},
		{"How do I harden PHP-FPM pools on Debian 12?", []string{"harden PHP-FPM pools Debian 12"}},
		{"Tell me about Mara Lindqvist and the rye starter", []string{"Mara Lindqvist rye starter", "Mara Lindqvist", "rye starter"}},
		{"What do the prices look like, and when are you open on Saturday?", []string{"prices open Saturday", "open Saturday"}},
	} {
		if got := rewriteQueries(tc.msg, contentTerms(tc.msg)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: queries %q, want %q", tc.msg, got, tc.want)
		}
	}
}

func TestChat_AsksToPaste(t *testing.T) {
	a := &Agent{Site: Site{URL: "http://127.0.0.1:8089"}}
	for _, tc := range []struct {
		reply, question string
		want            bool
	}{
		{"Could you paste the text of the page here?", "Summarize http://127.0.0.1:8089/about/", true},
		{"I can't access that link, sorry.", "What does http://127.0.0.1:8089/x/ say?", true},
		{"Please share the content of the page with me.", "what is this page about", true},
		{"I can only read this site, so I can't open https://other.example/post.", "Summarize https://other.example/post", false},
		{"The workshop opens at ten. Write to us by email.", "When are you open?", false},
		// typographic apostrophes, other verb forms and "what it says"
		{"I’m unable to load http://127.0.0.1:8089/x/ from here.", "Summarize it", true},
		{"I can’t access that link, sorry.", "What does http://127.0.0.1:8089/x/ say?", true},
		{"Would you mind dropping the article's text into this chat?", "Summarize http://127.0.0.1:8089/about/", true},
		{"Mind sending over the wording of that post?", "Summarize http://127.0.0.1:8089/about/", true},
		{"If you share what it says I'll summarize it.", "Summarize http://127.0.0.1:8089/about/", true},
		{"I have no way of viewing that page myself.", "Summarize http://127.0.0.1:8089/about/", true},
		{"Share this post with a friend.", "How do I share a post?", false},
		{"The post's text explains how to harden PHP-FPM pools.", "How do I harden PHP-FPM?", false},
	} {
		if got := a.AsksToPaste(tc.reply, tc.question); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.reply, got, tc.want)
		}
	}
}

func TestChat_SentencesAreVerbatim(t *testing.T) {
	body := []rune("# Prices\n\nWe roast on **Tuesdays** and Fridays. Every bag carries its roast date!\n\n| Item | Price |\n| Coffee, 250 g | 9.50 € |\n")
	for _, p := range []chatPassage{
		{string(body), 0, len(body)},
		{string(body[10:]), 10, len(body)},
		{string(body[10:]), 3, 7}, // wrong offsets: found by search
		{string(body[10:]), -1, -1},
	} {
		cs := sentences(body, p)
		if len(cs) < 2 {
			t.Fatalf("passage at %d: %d sentences", p.start, len(cs))
		}
		for _, c := range cs {
			if string(body[c.start:c.end]) != c.text {
				t.Errorf("sentence %q is not the body at %d:%d", c.text, c.start, c.end)
			}
		}
	}
}
