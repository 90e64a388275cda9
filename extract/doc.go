// Package extract turns one rendered HTML page into clean, citable text.
//
// It is a pure leaf package: it reads an io.Reader, never touches the network or
// the store, and imports no other package of this module. The pipeline is
//
//	bytes (capped) -> UTF-8 -> DOM -> metadata -> strip hidden/noise ->
//	main-content selection (container, readability, body) -> bluemonday ->
//	Markdown + plain text -> quality flags -> chunks
//
// Result.Markdown is the stored body. Chunk.Start/End are offsets in Unicode code
// points (runes) into it, so string([]rune(md)[c.Start:c.End]) == c.Text holds for
// every chunk; that is what verbatim citations rely on.
//
// JSON: dates are encoded as RFC 3339 strings; a zero (unknown) date is encoded as
// the empty string "" and decodes back to the zero time.
package extract
