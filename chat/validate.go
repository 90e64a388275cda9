package chat

import (
	"context"
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/askwp/askwpd/analysis"
	"github.com/askwp/askwpd/tool"
)

// Replies that ask the user for content the tools can fetch, or claim the
// site cannot be read.
var (
	rePaste     = regexp.MustCompile(`(?i)\b(paste|pasting|copy[- ]?(and|&|/)[- ]?paste)\b`)
	reSendText  = regexp.MustCompile(`(?i)\b(share|sharing|send|sending|provide|providing|give|giving|upload|uploading|forward|forwarding|drop|dropping|put|putting)\s+(over\s+|in\s+)?(me\s+|us\s+)?(with\s+)?(the\s+|a\s+|its\s+|some\s+|that\s+)?((page|article|post)?['’]?s?\s+)?(text|content|contents|excerpt|screenshot|wording|transcript|what (it|the page|the article|the post) says)\b`)
	reCantRead  = regexp.MustCompile(`(?i)\b(i|i['’]m|i am)\s+(can(no|['’])?t|cannot|am unable to|unable to|am not able to|not able to|don['’]t have (the )?(ability|access) to|do not have (the )?(ability|access) to|have no (way|access) (to|of))\s+(directly\s+)?(access|browse|open|visit|read|view|see|fetch|load|click)(ing)?\b`)
	reQuoteSpan = regexp.MustCompile(`“([^”\n]{8,400})”|"([^"\n]{8,400})"|„([^“”\n]{8,400})[“”]|«\s?([^»\n]{8,400}?)\s?»`)
	reSentence  = regexp.MustCompile(`[^.!?\n]*[.!?]*`)
)

// AsksToPaste reports whether a reply asks for content the tools could
// fetch. Asking about another website's page is allowed: only this site's
// pages can be read.
func (a *Agent) AsksToPaste(reply, question string) bool {
	if !rePaste.MatchString(reply) && !reSendText.MatchString(reply) && !reCantRead.MatchString(reply) {
		return false
	}
	urls := append(reURL.FindAllString(reply, -1), reURL.FindAllString(question, -1)...)
	if len(urls) == 0 {
		return true
	}
	for _, u := range urls {
		if a.sameOrigin(strings.TrimRight(u, ".,;:!?")) {
			return true
		}
	}
	return false
}

// validate checks a finished reply; the problems it returns are what the
// correction tells the model.
func (t *chatTurn) validate(ctx context.Context) []string {
	reply := t.reply.String()
	var problems []string
	if t.a.AsksToPaste(reply, t.lastQuestion()) {
		problems = append(problems, "It asks the user to paste or send content, or says a page cannot be read. You can read every page of this site yourself: use get_document, search_in_document or fetch_live_url, and answer from what they return.")
	}
	if bad := t.unverifiedQuotes(ctx, reply); len(bad) > 0 {
		problems = append(problems, "It puts words in quotation marks that do not appear on any page you retrieved: "+strings.Join(quoteAll(bad), ", ")+". Quote only exact words from the evidence; otherwise paraphrase without quotation marks.")
	}
	return problems
}

func (t *chatTurn) lastQuestion() string {
	if n := len(t.req.Messages); n > 0 {
		return t.req.Messages[n-1].Content
	}
	return ""
}

func correction(problems []string, site string) string {
	var b strings.Builder
	b.WriteString("[askwpd check] Your last reply breaks the rules:\n")
	for _, p := range problems {
		b.WriteString("- " + p + "\n")
	}
	b.WriteString("Write the whole reply again, for the user, without mentioning this check. Every page of " + site + " is readable with your tools.")
	return b.String()
}

// scrub removes the sentences that still break the rules after the one
// regeneration, so the user never sees a request to paste site content.
func (t *chatTurn) scrub() {
	var kept []string
	for _, s := range reSentence.FindAllString(t.reply.String(), -1) {
		if strings.TrimSpace(s) == "" {
			continue
		}
		if t.a.AsksToPaste(s, t.lastQuestion()) {
			continue
		}
		kept = append(kept, strings.TrimSpace(s))
	}
	text := strings.Join(kept, " ")
	if text == "" {
		text = "I have no answer to that from this site's pages."
	}
	t.emit(Event{Type: "status", Data: Status{Message: "Checking the answer…", Reset: true}})
	t.emit(Event{Type: "delta", Data: Delta{Text: text}})
	t.reply.Reset()
	t.reply.WriteString(text)
	t.a.Log.Warn("Chat reply scrubbed after regeneration")
}

// body returns a retrieved page's stored Markdown as code points, read
// page by page with get_document.
func (t *chatTurn) body(ctx context.Context, u string, cache map[string][]rune) []rune {
	if b, ok := cache[u]; ok {
		return b
	}
	var b []rune
	for start := 0; ; {
		args, _ := json.Marshal(tool.DocumentArgs{IDOrURL: u, Start: start, MaxChars: tool.MaxMaxChars})
		res, err := t.a.reader().Call(ctx, "get_document", args)
		var doc tool.DocumentResponse
		if err != nil || !decodeResult(res, &doc) {
			b = nil
			break
		}
		b = append(b, []rune(doc.Content)...)
		if doc.NextStart == nil || *doc.NextStart <= start {
			break
		}
		start = *doc.NextStart
	}
	cache[u] = b
	return b
}

// unverifiedQuotes are the spans in quotation marks, four words or more,
// that appear on none of the retrieved pages. Words the user wrote are not
// the reply's quotes.
func (t *chatTurn) unverifiedQuotes(ctx context.Context, reply string) []string {
	var bad []string
	docs := t.retrievedList()
	for _, m := range reQuoteSpan.FindAllStringSubmatch(reply, 8) {
		q := ""
		for _, g := range m[1:] {
			if g != "" {
				q = strings.TrimSpace(g)
			}
		}
		if len(strings.Fields(q)) < 4 || strings.Contains(t.lastQuestion(), q) || isTitle(docs, q) {
			continue
		}
		if !t.quoteFound(ctx, docs, q) {
			bad = append(bad, q)
		}
	}
	return bad
}

// isTitle tells whether a quoted span names a retrieved page: titles are
// quoted by convention and often are not part of the stored body.
func isTitle(docs []*retrievedDoc, q string) bool {
	q = strings.TrimRight(q, ".,;:!?")
	for _, rd := range docs {
		if strings.EqualFold(strings.TrimSpace(rd.title), q) {
			return true
		}
	}
	return false
}

// quoteFound asks verify_quote, which tolerates differences in spaces,
// quote marks and Markdown emphasis, on each retrieved page.
func (t *chatTurn) quoteFound(ctx context.Context, docs []*retrievedDoc, q string) bool {
	q = strings.TrimRight(q, ".,;:")
	for i, rd := range docs {
		if i == 12 {
			break
		}
		args, _ := json.Marshal(tool.QuoteArgs{URL: rd.url, Quote: q})
		res, err := t.a.Tools.Call(ctx, "verify_quote", args)
		if err != nil {
			continue
		}
		var r tool.QuoteResponse
		if b, err := json.Marshal(res); err == nil && json.Unmarshal(b, &r) == nil && r.Found {
			return true
		}
	}
	return false
}

// citeWords are the words a sentence and the reply share that count as
// attribution.
func citeWords(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range analysis.SurfaceWords(s) {
		lw := strings.ToLower(w)
		if askOnly(lw) || (utf8.RuneCountInString(lw) < 3 && !unicode.IsDigit([]rune(lw)[0])) {
			continue
		}
		if len(lw) > 4 && strings.HasSuffix(lw, "s") {
			lw = lw[:len(lw)-1]
		}
		out[lw] = true
	}
	return out
}

// candidate is a sentence of a retrieved page, located in its Body.
type candidate struct {
	text       string
	start, end int
	overlap    int
}

// sentences splits a passage into sentences located in body. Offsets are
// those of the stored body, so each quote is verbatim by construction;
// passages whose offsets do not match the body are located by search.
func sentences(body []rune, p chatPassage) []candidate {
	text := []rune(p.text)
	base := p.start
	bs := ""
	if base < 0 || p.end > len(body) || base > p.end || string(body[base:p.end]) != p.text {
		bs = string(body)
		i := strings.Index(bs, p.text)
		if i < 0 {
			base = -1
		} else {
			base = utf8.RuneCountInString(bs[:i])
		}
	}
	var out []candidate
	s := 0
	emit := func(e int) {
		a, b := s, e
		for a < b && (unicode.IsSpace(text[a]) || strings.ContainsRune("#>-*|`_", text[a]) || unicode.IsDigit(text[a]) && a+1 < b && text[a+1] == '.') {
			a++
		}
		for b > a && (unicode.IsSpace(text[b-1]) || strings.ContainsRune("|`*_", text[b-1])) {
			b--
		}
		seg := string(text[a:b])
		if len(strings.Fields(seg)) < 3 {
			return
		}
		if b-a > 300 {
			cut := a + 300
			for cut > a+200 && !unicode.IsSpace(text[cut]) {
				cut--
			}
			b = cut
			for b > a && unicode.IsSpace(text[b-1]) {
				b--
			}
			seg = string(text[a:b])
		}
		c := candidate{text: seg, start: -1}
		if base >= 0 {
			c.start, c.end = base+a, base+b
		} else if i := strings.Index(bs, seg); i >= 0 {
			c.start = utf8.RuneCountInString(bs[:i])
			c.end = c.start + (b - a)
		}
		if c.start >= 0 {
			out = append(out, c)
		}
	}
	for i, r := range text {
		if r == '\n' || ((r == '.' || r == '!' || r == '?') && (i+1 == len(text) || unicode.IsSpace(text[i+1]))) {
			emit(i + 1)
			s = i + 1
		}
	}
	if s < len(text) {
		emit(len(text))
	}
	return out
}

// leadPassage is the start of a page, for pages seen only as a list entry.
func leadPassage(body []rune) chatPassage {
	n := min(len(body), 1200)
	return chatPassage{string(body[:n]), 0, n}
}

type scoredSource struct {
	src       Source
	mentioned bool
	overlap   int
	order     int
}

// sources attributes the reply to retrieved pages: a page counts when the
// reply names it (title or URL) or shares enough words with one of its
// sentences, and its quote is that sentence, or the reply's own verified
// quote from it. Every quote is checked against the stored body.
func (t *chatTurn) sources(ctx context.Context, reply string) []Source {
	if strings.TrimSpace(reply) == "" {
		return []Source{}
	}
	cache := map[string][]rune{}
	rw := citeWords(reply)
	lreply := strings.ToLower(reply)
	var scored []scoredSource
	for i, rd := range t.retrievedList() {
		body := t.body(ctx, rd.url, cache)
		if len(body) == 0 {
			continue
		}
		mentioned := strings.Contains(reply, rd.url) || strings.Contains(reply, strings.TrimRight(rd.url, "/"))
		if title := strings.ToLower(strings.TrimSpace(rd.title)); utf8.RuneCountInString(title) >= 4 && strings.Contains(lreply, title) {
			mentioned = true
		}
		passages := rd.passages
		if len(passages) == 0 {
			passages = []chatPassage{leadPassage(body)}
		}
		var best candidate
		for _, p := range passages {
			for _, c := range sentences(body, p) {
				n := 0
				for w := range citeWords(c.text) {
					if rw[w] {
						n++
					}
				}
				c.overlap = n
				if c.overlap > best.overlap || best.text == "" {
					best = c
				}
			}
		}
		if best.text == "" {
			continue
		}
		// The reply's own quote from this page beats a guessed sentence.
		for _, m := range reQuoteSpan.FindAllStringSubmatch(reply, 8) {
			for _, g := range m[1:] {
				g = strings.TrimSpace(g)
				if len(strings.Fields(g)) < 3 {
					continue
				}
				j := strings.Index(string(body), g)
				if j < 0 {
					// "… restore it." quoted where the page goes on "… restore it, and …"
					g = strings.TrimRight(g, ".,;:")
					j = strings.Index(string(body), g)
				}
				if j >= 0 {
					st := utf8.RuneCountInString(string(body)[:j])
					best = candidate{text: g, start: st, end: st + utf8.RuneCountInString(g), overlap: best.overlap + 10}
					mentioned = true
				}
			}
		}
		if !mentioned && best.overlap < 3 {
			continue
		}
		if string(body[best.start:best.end]) != best.text {
			// Unreachable: candidates are cut from the body itself.
			t.a.Log.Error("Chat source does not match the stored body", "url", rd.url)
			continue
		}
		scored = append(scored, scoredSource{
			src: Source{Title: rd.title, URL: rd.url, Quote: best.text, Start: best.start, End: best.end,
				Published: rd.published, Modified: rd.modified},
			mentioned: mentioned, overlap: best.overlap, order: i,
		})
	}
	sort.SliceStable(scored, func(i, j int) bool {
		if scored[i].mentioned != scored[j].mentioned {
			return scored[i].mentioned
		}
		return scored[i].overlap > scored[j].overlap
	})
	out := []Source{}
	for i, s := range scored {
		if i == 5 {
			break
		}
		out = append(out, s.src)
	}
	return out
}

// leadSources are sources for a reply that could not be written: the
// first passage seen of each page.
func (t *chatTurn) leadSources(ctx context.Context, docs []*retrievedDoc, n int) []Source {
	cache := map[string][]rune{}
	out := []Source{}
	for _, rd := range docs {
		if len(out) == n {
			break
		}
		body := t.body(ctx, rd.url, cache)
		if len(body) == 0 {
			continue
		}
		passages := append(append([]chatPassage(nil), rd.passages...), leadPassage(body))
		for _, p := range passages {
			if cs := sentences(body, p); len(cs) > 0 {
				c := cs[0]
				out = append(out, Source{Title: rd.title, URL: rd.url, Quote: c.text, Start: c.start, End: c.end,
					Published: rd.published, Modified: rd.modified})
				break
			}
		}
	}
	return out
}

// evidenceLevel is grounded when a source comes from a page with real
// content, thin when only thin pages or unused evidence were found, and
// none when nothing was retrieved.
func (t *chatTurn) evidenceLevel() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.resp.Sources {
		if rd := t.retrieved[s.URL]; rd != nil && !rd.thin {
			return "grounded"
		}
	}
	if len(t.resp.Sources) > 0 || len(t.retrieved) > 0 {
		return "thin"
	}
	return "none"
}
