package extract

import (
	"context"
	"strings"
	"testing"
)

func prose(seed string) string {
	return strings.Repeat(seed+" is a sentence of ordinary article prose. ", 8)
}

// TestStructure covers the structural rules of selection and cleaning: merging
// repeated containers, dropping illustrations and cross-reference lines,
// keeping a header's standfirst.
func TestStructure(t *testing.T) {
	for _, tc := range []struct {
		name       string
		body       string
		want, drop []string
	}{
		{
			name: "forum thread keeps every post",
			body: `<div id="posts"><ol class="posts">
<li class="postbit first"><div class="user">alice</div><div class="postbody"><div class="post-content">` + prose("Alpha") + `</div></div></li>
<li class="postbit"><div class="user">bob</div><div class="postbody"><div class="post-content">Bravo reply, short but content.</div></div></li>
<li class="postbit"><div class="user">carol</div><div class="postbody"><div class="post-content">` + prose("Charlie") + `</div></div></li>
</ol></div><div class="sidebar">Sidebar text</div>`,
			want: []string{"Alpha is", "Bravo reply", "Charlie is"},
			drop: []string{"Sidebar text"},
		},
		{
			name: "recipe sections split over sibling articles",
			body: `<h1>Cake</h1><main><article class="box recipe-head"><p>` + prose("Head") + `</p></article>
<article class="box recipe-ingredients"><h2>Ingredients</h2><table><tr><td>125 g</td><td>flour</td></tr><tr><td>65 g</td><td>sugar</td></tr></table></article>
<article class="box recipe-steps"><h2>Steps</h2><p>` + prose("Step") + prose("More") + `</p></article></main>`,
			want: []string{"Head is", "flour", "Step is"},
		},
		{
			name: "next article of an infinite scroll stays out",
			body: `<div class="stream"><article class="story"><h1>First</h1><p>` + prose("First") + prose("Long") + `</p></article>
<article class="story"><h1>Second</h1><p>` + prose("Second") + `</p></article></div>`,
			want: []string{"First is"},
			drop: []string{"Second is"},
		},
		{
			name: "picture with caption and credit is dropped, illustrated steps are kept",
			body: `<article><p>` + prose("Intro") + `</p>
<div class="imginline"><img src="a.jpg" alt=""><span>Figure: snow depth in the valley. Photo: Jane Doe</span></div>
<p>` + prose("Middle") + `</p>
<div class="step"><img src="1.jpg"><span>Whisk the eggs.</span></div>
<div class="step"><img src="2.jpg"><span>Fold in the flour.</span></div>
<p>Inline <img src="i.png"> icon in a short paragraph.</p>
<p>` + prose("End") + `</p></article>`,
			want: []string{"Intro is", "Middle is", "Whisk the eggs.", "Fold in the flour.", "icon in a short paragraph", "End is"},
			drop: []string{"snow depth", "Jane Doe"},
		},
		{
			name: "cross-reference line inside the text is dropped",
			body: `<article><p>` + prose("Start") + `</p>
<p>Read also: <a href="/other">The other story about something else entirely</a></p>
<p>` + prose("Finish") + ` See <a href="/src">the source</a> for details.</p></article>`,
			want: []string{"Start is", "Finish is", "the source"},
			drop: []string{"Read also", "other story"},
		},
		{
			name: "header with a standfirst is kept",
			body: `<article><header><h1>Headline</h1><p class="lead">` + prose("Lead") + `</p></header><div class="entry-content"><p>` + prose("Body") + prose("More") + `</p></div></article>`,
			want: []string{"Lead is", "Body is"},
		},
		{
			name: "block inside a link",
			body: `<main><p>` + prose("Text") + `</p><div>Lead words <a href="/card"><div>Card title</div><div>Card text</div></a></div><p>` + prose("After") + `</p></main>`,
			want: []string{"Text is", "After is"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page := `<html><head><title>T</title></head><body>` + tc.body + `</body></html>`
			res, err := Extract(context.Background(), strings.NewReader(page), Options{URL: "https://example.org/p/"})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.Text, w) {
					t.Errorf("text lacks %q (source %s):\n%s", w, res.Source, res.Text)
				}
			}
			for _, d := range tc.drop {
				if strings.Contains(res.Text, d) {
					t.Errorf("text keeps %q (source %s):\n%s", d, res.Source, res.Text)
				}
			}
			checkChunks(t, res.Markdown, res.Chunks)
		})
	}
}
