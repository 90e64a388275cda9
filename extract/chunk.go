package extract

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode/utf8"
)

// Chunk is a contiguous piece of a Markdown body.
//
// Text is always an exact substring of the body: string([]rune(md)[Start:End]) ==
// Text. Consequently, when a fenced code block larger than MaxTokens is split by
// lines, its pieces are the raw lines: the first piece contains the opening fence
// line, the last the closing one, the middle ones none. Such pieces carry
// Part (1-based) and CodeLang; Display re-wraps a piece as a valid fenced block
// for showing it on its own.
type Chunk struct {
	Ord         int      `json:"ord"`
	Text        string   `json:"text"`
	Start       int      `json:"start"` // offsets in Unicode code points (runes) into the Markdown
	End         int      `json:"end"`
	HeadingPath []string `json:"heading_path"` // e.g. ["Install", "On Debian"] (H2 > H3)
	Type        string   `json:"type"`         // prose | code | api | cmd | config
	CodeLang    string   `json:"code_lang,omitempty"`
	ContentHash string   `json:"content_hash"` // hex sha256 of Text
	Tokens      int      `json:"tokens"`       // approximate token count (runes/4)
	// Part numbers the pieces of a code block that had to be split (1, 2, ...); 0 otherwise.
	Part int `json:"part,omitempty"`
}

// Chunk types.
const (
	TypeProse  = "prose"
	TypeCode   = "code"
	TypeAPI    = "api"
	TypeCmd    = "cmd"
	TypeConfig = "config"
)

// ChunkOptions size the chunks, in approximate tokens.
type ChunkOptions struct {
	TargetTokens int // default 400
	MaxTokens    int // hard cap, default 800 (a single over-long code line can exceed it: lines are never split)
}

const (
	defaultTarget = 400
	defaultMax    = 800
)

// Display returns the chunk as it should be shown alone: pieces of a split code
// block are re-wrapped in a fence with the block's language.
func (c Chunk) Display() string {
	if c.Part == 0 {
		return c.Text
	}
	lines := strings.Split(c.Text, "\n")
	if _, _, ok := fenceOpen(lines[0]); ok {
		lines = lines[1:]
	}
	if n := len(lines); n > 0 && (isFenceClose(lines[n-1], '`', 3) || isFenceClose(lines[n-1], '~', 3)) {
		lines = lines[:n-1]
	}
	code := strings.Join(lines, "\n")
	fence := strings.Repeat("`", max(3, maxRun(code, '`')+1))
	return fence + c.CodeLang + "\n" + code + "\n" + fence
}

// approxTokens estimates tokens as one per four characters (at least one).
func approxTokens(s string) int {
	n := utf8.RuneCountInString(s)
	return max(1, (n+3)/4)
}

// line is one line of the body; start/end are byte offsets (end excludes '\n').
type line struct {
	start, end int
}

type blockKind int

const (
	bPara blockKind = iota
	bHeading
	bCode
)

// mdBlock is a run of lines: a paragraph (or table, list), a heading, or a fence.
type mdBlock struct {
	kind        blockKind
	first, last int // line indexes, inclusive
	level       int
	title       string
	lang        string
	fenceChar   byte
	fenceLen    int
	closed      bool
	tokens      int
}

// ChunkMarkdown splits a Markdown body into chunks: at headings (keeping the
// heading path), then between paragraphs, aiming at TargetTokens with MaxTokens
// as the hard cap. A fenced code block is never split unless it alone exceeds
// MaxTokens; then it is split between lines. Paragraphs and tables are split
// only between lines, and a single over-long prose line at sentence or word
// boundaries. It works on plain text too (every blank-line separated run is a
// paragraph).
func ChunkMarkdown(md string, opt ChunkOptions) []Chunk {
	if opt.TargetTokens <= 0 {
		opt.TargetTokens = defaultTarget
	}
	if opt.MaxTokens <= 0 {
		opt.MaxTokens = max(defaultMax, opt.TargetTokens*2)
	}
	if opt.MaxTokens < opt.TargetTokens {
		opt.MaxTokens = opt.TargetTokens
	}
	if !utf8.ValidString(md) {
		// Each invalid byte becomes one U+FFFD, exactly as []rune(md) sees it,
		// so rune offsets stay valid against the caller's string.
		md = string([]rune(md))
	}
	c := &chunker{md: md, opt: opt}
	c.splitLines()
	c.parseBlocks()
	c.build()
	c.finish()
	return c.out
}

type chunker struct {
	md     string
	opt    ChunkOptions
	lines  []line
	blocks []mdBlock
	out    []Chunk

	path     []heading
	curFirst int // first block index of the open chunk, -1 when none
	curLast  int
	curTok   int
	curBody  bool // the open chunk holds more than headings
}

type heading struct {
	level int
	title string
}

func (c *chunker) splitLines() {
	start := 0
	for i := 0; i < len(c.md); i++ {
		if c.md[i] == '\n' {
			c.lines = append(c.lines, line{start, i})
			start = i + 1
		}
	}
	c.lines = append(c.lines, line{start, len(c.md)})
}

func (c *chunker) text(l int) string { return c.md[c.lines[l].start:c.lines[l].end] }

func blank(s string) bool { return strings.TrimSpace(s) == "" }

// fenceOpen recognises ``` or ~~~ (3+) after at most three spaces.
func fenceOpen(s string) (ch byte, n int, ok bool) {
	i := 0
	for i < len(s) && i < 3 && s[i] == ' ' {
		i++
	}
	if i >= len(s) || (s[i] != '`' && s[i] != '~') {
		return 0, 0, false
	}
	ch = s[i]
	j := i
	for j < len(s) && s[j] == ch {
		j++
	}
	n = j - i
	if n < 3 {
		return 0, 0, false
	}
	if ch == '`' && strings.IndexByte(s[j:], '`') >= 0 {
		return 0, 0, false
	}
	return ch, n, true
}

func isFenceClose(s string, ch byte, n int) bool {
	i := 0
	for i < len(s) && i < 3 && s[i] == ' ' {
		i++
	}
	j := i
	for j < len(s) && s[j] == ch {
		j++
	}
	return j-i >= n && blank(s[j:])
}

// headingLine recognises ATX headings.
func headingLine(s string) (int, string, bool) {
	i := 0
	for i < len(s) && i < 3 && s[i] == ' ' {
		i++
	}
	j := i
	for j < len(s) && s[j] == '#' {
		j++
	}
	lvl := j - i
	if lvl < 1 || lvl > 6 || (j < len(s) && s[j] != ' ' && s[j] != '\t') {
		return 0, "", false
	}
	t := strings.TrimSpace(s[j:])
	// Closing sequence: "## Title ##".
	if k := strings.TrimRight(t, "#"); k != t && (k == "" || strings.HasSuffix(k, " ")) {
		t = strings.TrimSpace(k)
	}
	return lvl, unescapeInline(t), true
}

func (c *chunker) parseBlocks() {
	n := len(c.lines)
	for i := 0; i < n; {
		s := c.text(i)
		if blank(s) {
			i++
			continue
		}
		if ch, fl, ok := fenceOpen(s); ok {
			b := mdBlock{kind: bCode, first: i, fenceChar: ch, fenceLen: fl}
			info := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(s), string(ch)))
			if f := strings.Fields(info); len(f) > 0 {
				b.lang = cleanLang(strings.Trim(f[0], "{}."))
			}
			j := i + 1
			for j < n && !isFenceClose(c.text(j), ch, fl) {
				j++
			}
			if j < n {
				b.closed = true
				b.last = j
			} else {
				b.last = n - 1
			}
			c.addBlock(b)
			i = b.last + 1
			continue
		}
		if lvl, t, ok := headingLine(s); ok {
			c.addBlock(mdBlock{kind: bHeading, first: i, last: i, level: lvl, title: t})
			i++
			continue
		}
		j := i
		for j+1 < n {
			nx := c.text(j + 1)
			if blank(nx) {
				break
			}
			if _, _, ok := fenceOpen(nx); ok {
				break
			}
			if _, _, ok := headingLine(nx); ok {
				break
			}
			j++
		}
		c.addBlock(mdBlock{kind: bPara, first: i, last: j})
		i = j + 1
	}
}

func (c *chunker) addBlock(b mdBlock) {
	b.tokens = approxTokens(c.md[c.lines[b.first].start:c.lines[b.last].end])
	c.blocks = append(c.blocks, b)
}

func (c *chunker) build() {
	c.curFirst = -1
	for i := range c.blocks {
		b := &c.blocks[i]
		switch b.kind {
		case bHeading:
			if c.curBody {
				c.flush()
			}
			for len(c.path) > 0 && c.path[len(c.path)-1].level >= b.level {
				c.path = c.path[:len(c.path)-1]
			}
			c.path = append(c.path, heading{b.level, b.title})
			c.add(i)
		case bCode:
			if c.curBody {
				c.flush()
			}
			if c.curTok+b.tokens > c.opt.MaxTokens {
				c.flush()
				c.splitBlock(b)
				continue
			}
			c.add(i)
			c.curBody = true
			c.flush()
		default:
			if c.curTok+b.tokens > c.opt.MaxTokens && b.tokens > c.opt.TargetTokens {
				// Too big to travel with anything: flush what is open, then cut it.
				if b.tokens > c.opt.MaxTokens {
					c.flush()
					c.splitBlock(b)
					continue
				}
			}
			if c.curBody && c.curTok+b.tokens > c.opt.TargetTokens {
				c.flush()
			}
			c.add(i)
			c.curBody = true
		}
	}
	c.flush()
}

func (c *chunker) add(i int) {
	if c.curFirst < 0 {
		c.curFirst = i
	}
	c.curLast = i
	c.curTok += c.blocks[i].tokens
}

// flush emits the open chunk, from its first block to its last.
func (c *chunker) flush() {
	if c.curFirst < 0 {
		return
	}
	first, last := c.blocks[c.curFirst], c.blocks[c.curLast]
	start, end := c.lines[first.first].start, c.lines[last.last].end
	ch := Chunk{HeadingPath: c.pathCopy()}
	// The fence language and the type come from the chunk's code block, if any.
	for k := c.curFirst; k <= c.curLast; k++ {
		if b := c.blocks[k]; b.kind == bCode {
			ch.CodeLang = b.lang
			ch.Type = classifyCode(b.lang, c.codeBody(b, b.first+1, b.last))
		}
	}
	c.emit(ch, start, end)
	c.curFirst, c.curTok, c.curBody = -1, 0, false
}

func (c *chunker) pathCopy() []string {
	p := make([]string, len(c.path))
	for i, h := range c.path {
		p[i] = h.title
	}
	return p
}

// codeBody returns the code lines [from, to) of a fence (fence lines excluded).
func (c *chunker) codeBody(b mdBlock, from, to int) string {
	if !b.closed {
		to = b.last + 1
	}
	if from >= to {
		return ""
	}
	return c.md[c.lines[from].start:c.lines[to-1].end]
}

func (c *chunker) emit(ch Chunk, start, end int) {
	// Trailing white space stays between chunks.
	for end > start && (c.md[end-1] == ' ' || c.md[end-1] == '\t' || c.md[end-1] == '\r' || c.md[end-1] == '\n') {
		end--
	}
	// Leading blank lines stay between chunks too, but not the indentation of
	// the first line: split code keeps its indentation.
	for start < end && (c.md[start] == '\r' || c.md[start] == '\n') {
		start++
	}
	if strings.TrimSpace(c.md[start:end]) == "" {
		return
	}
	ch.Text = c.md[start:end]
	ch.Start, ch.End = start, end // byte offsets; converted to runes in finish
	if ch.Type == "" {
		ch.Type = classifyProse(ch.Text)
	}
	ch.Tokens = approxTokens(ch.Text)
	c.out = append(c.out, ch)
}

// splitBlock cuts an oversized block between lines (code, tables, lists) or,
// for a single over-long prose line, at sentence then word boundaries.
func (c *chunker) splitBlock(b *mdBlock) {
	limit := c.opt.TargetTokens
	if b.kind == bCode {
		limit = c.opt.MaxTokens
	}
	part := 0
	codeType := ""
	if b.kind == bCode {
		codeType = classifyCode(b.lang, c.codeBody(*b, b.first+1, b.last))
	}
	emitRange := func(start, end int) {
		ch := Chunk{HeadingPath: c.pathCopy()}
		if b.kind == bCode {
			part++
			ch.Part = part
			ch.CodeLang = b.lang
			ch.Type = codeType
		}
		c.emit(ch, start, end)
	}
	pieceStart := c.lines[b.first].start
	pieceTok := 0
	for l := b.first; l <= b.last; l++ {
		ln := c.lines[l]
		lt := approxTokens(c.md[ln.start:ln.end])
		if b.kind != bCode && lt > limit {
			// Close the running piece, then cut this line.
			if pieceTok > 0 {
				emitRange(pieceStart, c.lines[l-1].end)
			}
			for _, seg := range splitLongLine(c.md, ln.start, ln.end, limit) {
				emitRange(seg[0], seg[1])
			}
			pieceStart, pieceTok = ln.end, 0
			if l+1 <= b.last {
				pieceStart = c.lines[l+1].start
			}
			continue
		}
		if pieceTok > 0 && pieceTok+lt > limit {
			emitRange(pieceStart, c.lines[l-1].end)
			pieceStart, pieceTok = ln.start, 0
		}
		pieceTok += lt
	}
	if pieceTok > 0 {
		emitRange(pieceStart, c.lines[b.last].end)
	}
}

// splitLongLine cuts md[start:end] into pieces of at most limit tokens, preferring
// sentence ends, then spaces; a run without spaces is cut at a rune boundary.
func splitLongLine(md string, start, end, limit int) [][2]int {
	maxRunes := limit * 4
	var out [][2]int
	for start < end {
		// Find the byte position after maxRunes runes.
		pos, n := start, 0
		for pos < end && n < maxRunes {
			_, sz := utf8.DecodeRuneInString(md[pos:end])
			pos += sz
			n++
		}
		if pos >= end {
			out = append(out, [2]int{start, end})
			break
		}
		seg := md[start:pos]
		cut := -1
		for _, sep := range []string{". ", "! ", "? ", "; ", "。", ", "} {
			if i := strings.LastIndex(seg, sep); i > len(seg)/3 {
				cut = start + i + len(strings.TrimRight(sep, " "))
				break
			}
		}
		if cut < 0 {
			if i := strings.LastIndexAny(seg, " \t"); i > 0 {
				cut = start + i
			}
		}
		if cut <= start {
			cut = pos
		}
		if splitsEscape(md, start, cut) {
			// Each piece must render as its part of the whole: keep "\<" together.
			if cut-1 > start {
				cut--
			} else {
				cut++
			}
		}
		out = append(out, [2]int{start, cut})
		start = cut
		for start < end && (md[start] == ' ' || md[start] == '\t') {
			start++
		}
	}
	return out
}

// finish converts byte offsets to rune offsets, numbers chunks and hashes them.
func (c *chunker) finish() {
	bytePos, runePos := 0, 0
	toRune := func(b int) int {
		runePos += utf8.RuneCountInString(c.md[bytePos:b])
		bytePos = b
		return runePos
	}
	for i := range c.out {
		ch := &c.out[i]
		ch.Ord = i
		ch.Start = toRune(ch.Start)
		ch.End = toRune(ch.End)
		sum := sha256.Sum256([]byte(ch.Text))
		ch.ContentHash = hex.EncodeToString(sum[:])
	}
}
