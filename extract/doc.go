// Package extract turns one rendered HTML page into clean, citable text.
//
// It is a pure leaf package: it reads an io.Reader, never touches the network or
// the store, and imports no other package of this module. The pipeline is
//
//	bytes (capped) -> UTF-8 -> DOM -> metadata -> strip hidden/noise ->
//	main-content selection (container, readability, body) -> bluemonday ->
//	Markdown + plain text -> quality flags -> chunks
//
// On a singular WordPress page (the body classes name the post) whose markup
// has one wrapper of the post's content (core's post-content block, or the
// entry-content of classic themes) that is not inside another post's
// container, the text is that wrapper's, at any length: a one-line page is
// its line, never the template around it. Core's theme and widget blocks
// (site title, post title, date, author, terms, navigation, comments, query
// loops, latest posts...) are the site's data, not the post's text, wherever
// they stand; on listings the query loops stay. Inside a post's own text the
// cleaning keeps what it must guess at elsewhere: lists of links, the text
// laid out beside a picture, and labels followed by more text.
//
// Main-content selection is structural, never keyed to a site: the chosen
// container is widened to its repeated peers (forum posts, recipe or CMS
// sections: same tag and base class at the same place under repeated siblings;
// a peer with its own <h1> is a separate document and stays out). Cleaning drops
// boilerplate by class/role words, link density, illustrations (an image with
// no more than a caption's worth of text, unless it is a repeated step or holds
// a paragraph of prose) and, inside the text, cross-reference lines (a short
// paragraph that is mostly one link). Headings are never dropped for their
// class/id words (ids are anchor slugs); a <header> holding a paragraph of prose
// is the standfirst, not boilerplate.
//
// Result.Markdown is the stored body. Chunk.Start/End are offsets in Unicode code
// points (runes) into it, so string([]rune(md)[c.Start:c.End]) == c.Text holds for
// every chunk; that is what verbatim citations rely on. The page's text is in it
// with CommonMark backslash escapes wherever it would otherwise read as markup
// ("\<script\>", "\*", "1\. "), never inside code; Result.Text has none. A quote
// of what the page shows therefore matches the body once backslashes are dropped
// on both sides.
//
// JSON: dates are encoded as RFC 3339 strings; a zero (unknown) date is encoded as
// the empty string "" and decodes back to the zero time.
package extract
