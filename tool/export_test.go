package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/extract"
	"github.com/askwp/askwpd/search"
	"github.com/askwp/askwpd/store"
)

var update = flag.Bool("update", false, "write "+ExportPath+" from the schemas")

// The plugin's copy of the schemas is what the Go schemas produce: no
// second copy drifts. `go generate ./tool` rewrites it.
func TestExportedSchemas(t *testing.T) {
	want, err := ExportSchemas()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", ExportPath)
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: run go generate ./tool", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from what tool/schema.go produces: run go generate ./tool, and commit it", ExportPath)
	}
	var doc struct {
		Tools []struct {
			Name        string      `json:"name"`
			Annotations Annotations `json:"annotations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(got, &doc); err != nil || len(doc.Tools) != len(Tools) {
		t.Fatalf("%s: %d tools, %v", ExportPath, len(doc.Tools), err)
	}
	for _, tl := range doc.Tools {
		if want := tl.Name == "fetch_live_url"; tl.Annotations.OpenWorldHint != want || !tl.Annotations.ReadOnlyHint ||
			!tl.Annotations.IdempotentHint || tl.Annotations.DestructiveHint {
			t.Errorf("%s: annotations %+v", tl.Name, tl.Annotations)
		}
	}
}

// compile compiles each tool's input or output schema as JSON Schema
// 2020-12, which checks it against the draft's meta-schema too.
func compile(t *testing.T, output bool) map[string]*jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	out := map[string]*jsonschema.Schema{}
	for _, tl := range Tools {
		raw := tl.Function.Parameters
		if output {
			raw = tl.OutputSchema
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", tl.Function.Name, err)
		}
		loc := fmt.Sprintf("mem:///%s-%v.json", tl.Function.Name, output)
		if err := c.AddResource(loc, doc); err != nil {
			t.Fatalf("%s: %v", tl.Function.Name, err)
		}
		if out[tl.Function.Name], err = c.Compile(loc); err != nil {
			t.Fatalf("%s: %v", tl.Function.Name, err)
		}
	}
	return out
}

// resultTypes are the Go types each tool's result is encoded from.
var resultTypes = map[string]reflect.Type{
	"search_site":        reflect.TypeFor[SearchResponse](),
	"get_document":       reflect.TypeFor[DocumentResponse](),
	"get_recent":         reflect.TypeFor[RecentResponse](),
	"search_in_document": reflect.TypeFor[InDocumentResponse](),
	"fetch_live_url":     reflect.TypeFor[LiveResponse](),
	"verify_quote":       reflect.TypeFor[QuoteResponse](),
}

// Every field a result can carry is in its output schema, with the JSON
// type its Go type encodes to, and required exactly when encoding/json
// always writes it; and the schema names no field the result lacks. The
// results validated below show only the fields those calls fill; this
// covers the rest.
func TestOutputSchemas_MatchResultTypes(t *testing.T) {
	compile(t, true)
	for _, tl := range Tools {
		typ, ok := resultTypes[tl.Function.Name]
		if !ok {
			t.Errorf("%s: no result type", tl.Function.Name)
			continue
		}
		var sch map[string]any
		if err := json.Unmarshal(tl.OutputSchema, &sch); err != nil {
			t.Fatal(err)
		}
		checkCovers(t, tl.Function.Name, typ, sch)
	}
}

func checkCovers(t *testing.T, path string, typ reflect.Type, sch map[string]any) {
	t.Helper()
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	types := schemaTypes(sch)
	want := jsonKind(typ)
	if !slices.Contains(types, want) {
		t.Errorf("%s: schema type %v, Go %s encodes as %s", path, types, typ, want)
		return
	}
	if typ.Kind() == reflect.Slice && want == "array" {
		if items, ok := sch["items"].(map[string]any); ok {
			checkCovers(t, path+"[]", typ.Elem(), items)
		} else {
			t.Errorf("%s: an array without items", path)
		}
		return
	}
	if typ.Kind() != reflect.Struct || typ == reflect.TypeFor[time.Time]() {
		return
	}
	props, _ := sch["properties"].(map[string]any)
	var required []string
	for _, r := range asSlice(sch["required"]) {
		required = append(required, r.(string))
	}
	seen := map[string]bool{}
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		seen[name] = true
		p, ok := props[name].(map[string]any)
		if !ok {
			t.Errorf("%s.%s: not in the output schema", path, name)
			continue
		}
		omit := strings.Contains(opts, "omitempty")
		if slices.Contains(required, name) == omit {
			t.Errorf("%s.%s: required is %v, but omitempty is %v", path, name, !omit, omit)
		}
		checkCovers(t, path+"."+name, f.Type, p)
	}
	for name := range props {
		if !seen[name] {
			t.Errorf("%s.%s: in the output schema, but no result has it", path, name)
		}
	}
}

func schemaTypes(sch map[string]any) []string {
	switch v := sch["type"].(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, x := range v {
			out = append(out, x.(string))
		}
		return out
	}
	return nil
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

func jsonKind(typ reflect.Type) string {
	switch typ.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int32, reflect.Int64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice:
		return "array"
	case reflect.Map, reflect.Struct:
		if typ == reflect.TypeFor[time.Time]() {
			return "string"
		}
		return "object"
	}
	return typ.Kind().String()
}

// The limits the input schemas state are the ones the tools apply.
func TestInputSchemas_Limits(t *testing.T) {
	compile(t, false)
	for _, tl := range Tools {
		var sch struct {
			Properties map[string]struct {
				MaxLength *int `json:"maxLength"`
				Maximum   *int `json:"maximum"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(tl.Function.Parameters, &sch); err != nil {
			t.Fatal(err)
		}
		check := func(prop string, got *int, want int) {
			if got == nil || *got != want {
				t.Errorf("%s.%s: limit %v, the tool's is %d", tl.Function.Name, prop, got, want)
			}
		}
		if p, ok := sch.Properties["query"]; ok {
			check("query", p.MaxLength, maxQueryRunes)
		}
		if p, ok := sch.Properties["limit"]; ok {
			check("limit", p.Maximum, maxLimit)
		}
		if p, ok := sch.Properties["max_chars"]; ok {
			check("max_chars", p.Maximum, MaxMaxChars)
		}
	}
}

// schemaSite is the test store's site: an address where nothing listens,
// so that live fetches fail at once, as they do when the site is down.
const schemaSite = "http://127.0.0.1:9"

// schemaPages are the test store's pages, as HTML the extractor reads.
var schemaPages = []struct{ url, html string }{
	{"http://127.0.0.1:9/docs/install/", `<html lang="en"><head><title>Installing the grinder</title>
<meta property="article:published_time" content="2026-03-01T10:00:00+00:00"></head>
<body class="page-template-default page page-id-12"><main>
<h1>Installing the grinder</h1>
<p>The burr grinder needs a level counter and a grounded socket. Unpack the hopper, the burrs and the "quick start" card; keep the box for returns.</p>
<h2>Mounting the burrs</h2>
<p>Seat the lower burr first, then turn the upper burr clockwise until it stops. Retention of old grounds drops when the chute is brushed daily.</p>
<pre><code class="language-bash">sudo grinderctl calibrate --burr=conical
sudo grinderctl test</code></pre>
<h2>Cleaning</h2>
<p>Brush the chute every day and run rice-free cleaning tablets through the grinder once a month. Never wash the burrs with water.</p>
<p>Espresso grinders keep a few grams of old coffee: purge two grams before the first shot of the day.</p>
</main></body></html>`},
	{"http://127.0.0.1:9/2026/04/spring-roast/", `<html lang="en"><head><title>Spring roast announced</title>
<meta property="article:published_time" content="2026-04-02T08:30:00+00:00">
<meta property="article:modified_time" content="2026-04-03T09:00:00+00:00"></head>
<body class="post-template-default single single-post postid-34"><main><article>
<h1>Spring roast announced</h1>
<p>Our spring roast is a washed Ethiopian coffee with notes of bergamot and peach. It ships from the first of May, and the grinder bundle comes with a free bag.</p>
<p>Pre-orders open on the twentieth of April; the roast is limited to three hundred bags.</p>
</article></main></body></html>`},
	{"http://127.0.0.1:9/contact/", `<html lang="en"><head><title>Contact</title></head>
<body class="page page-id-56"><main><h1>Contact</h1><p>Write to us.</p></main></body></html>`},
}

// schemaService is a Service over a real store holding schemaPages.
func schemaService(t *testing.T) *Service {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "askwpd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log := slog.New(slog.DiscardHandler)
	origin, err := crawl.ParseOrigin(schemaSite)
	if err != nil {
		t.Fatal(err)
	}
	s := &Service{Log: log, Store: st, Search: search.New(st), Crawler: crawl.New(crawl.Site{URL: schemaSite, Origin: origin},
		crawl.Options{Timeout: 2 * time.Second, RatePerSec: 100, Concurrency: 1}, st, nil, log)}
	t.Cleanup(s.Search.Close)
	st.Observe(s)
	for _, p := range schemaPages {
		res, err := extract.Extract(ctx, strings.NewReader(p.html), extract.Options{URL: p.url})
		if err != nil {
			t.Fatal(err)
		}
		doc := &store.Document{URL: p.url, PostID: res.PostID, PostType: res.PostType, Title: res.Title, Lang: res.Lang,
			Published: res.Published, Modified: res.Modified, Categories: []string{"Coffee"}, Body: res.Markdown, Text: res.Text,
			Thin: res.Thin, ThinReason: res.ThinReason, Source: res.Source, WordCount: res.WordCount, ContentHash: res.ContentHash,
			FetchedAt: time.Now().Add(-time.Hour), Chunks: crawl.StoreChunks(res.Chunks)}
		if doc.PostType == "" {
			doc.PostType = "page"
		}
		if _, err := st.PutDocument(ctx, doc); err != nil {
			t.Fatal(err)
		}
		// Links to pages not indexed, for selective expansion to try.
		if err := st.PutLinks(ctx, doc.ID, []store.Link{{URL: "http://127.0.0.1:9/docs/warranty/", Text: "warranty terms"}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Search.Load(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// schemaCalls call every tool in the ways that fill the different parts
// of its result.
var schemaCalls = []struct{ name, args string }{
	{"search_site", `{"query": "burr grinder retention"}`},
	{"search_site", `{"query": "grinder", "passages": true, "limit": 5}`},
	{"search_site", `{"query": "grindre calibrate"}`},
	{"search_site", `{"query": "sudo grinderctl", "filters": {"chunk_type": "code", "language": "bash"}}`},
	{"search_site", `{"query": "grinder warranty", "sort": "date"}`},
	{"search_site", `{"query": "the of and"}`},
	{"search_site", `{"query": "zebra xylophone"}`},
	{"get_document", `{"id_or_url": "http://127.0.0.1:9/docs/install/"}`},
	{"get_document", `{"id_or_url": "http://127.0.0.1:9/docs/install/", "max_chars": 200}`},
	{"get_document", `{"id_or_url": "http://127.0.0.1:9/docs/install/", "mode": "outline"}`},
	{"get_document", `{"id_or_url": "http://127.0.0.1:9/docs/install/", "mode": "chunks", "max_chars": 300}`},
	{"get_document", `{"id_or_url": "12", "mode": "text", "start": 40}`},
	{"get_document", `{"id_or_url": "http://127.0.0.1:9/contact/"}`},
	{"get_recent", `{}`},
	{"get_recent", `{"type": "any", "limit": 10}`},
	{"get_recent", `{"type": "product"}`},
	{"search_in_document", `{"id_or_url": "http://127.0.0.1:9/docs/install/", "query": "chute brush"}`},
	{"search_in_document", `{"id_or_url": "http://127.0.0.1:9/docs/install/", "query": "zebra"}`},
	{"fetch_live_url", `{"url": "https://example.org/elsewhere/"}`},
	{"fetch_live_url", `{"url": "mailto:someone@site.test"}`},
	{"fetch_live_url", `{"url": "http://127.0.0.1:9/docs/install/"}`},
	{"verify_quote", `{"url": "http://127.0.0.1:9/docs/install/", "quote": "Never wash the burrs with water."}`},
	{"verify_quote", `{"url": "http://127.0.0.1:9/docs/install/", "quote": "Unpack the hopper, the burrs and the “quick start” card"}`},
	{"verify_quote", `{"url": "http://127.0.0.1:9/docs/install/", "quote": "grinder"}`},
	{"verify_quote", `{"url": "http://127.0.0.1:9/docs/install/", "quote": "Wash the burrs with water."}`},
	{"verify_quote", `{"url": "http://127.0.0.1:9/nowhere/", "quote": "anything"}`},
}

// Real results of every tool satisfy its output schema, as a JSON Schema
// 2020-12 validator reads it.
func TestOutputSchemas_ValidateResults(t *testing.T) {
	schemas := compile(t, true)
	s := schemaService(t)
	called := map[string]bool{}
	filled := map[string]bool{} // the optional parts the calls produced
	for _, c := range schemaCalls {
		out, err := s.Call(context.Background(), c.name, json.RawMessage(c.args))
		if err != nil {
			t.Fatalf("%s %s: %v", c.name, c.args, err)
		}
		raw, err := json.Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		if err := schemas[c.name].Validate(inst); err != nil {
			t.Errorf("%s %s: the result does not satisfy the output schema: %v\n%s", c.name, c.args, err, raw)
		}
		called[c.name] = true
		var top map[string]any
		_ = json.Unmarshal(raw, &top)
		for k := range top {
			filled[c.name+"."+k] = true
		}
	}
	for _, tl := range Tools {
		if !called[tl.Function.Name] {
			t.Errorf("%s: no result validated", tl.Function.Name)
		}
	}
	for _, part := range []string{"search_site.corrections", "search_site.expanded", "get_document.next_start",
		"get_document.outline", "get_document.segments", "fetch_live_url.error", "verify_quote.starts"} {
		if !filled[part] {
			t.Errorf("no call filled %s: the test no longer covers it", part)
		}
	}
}

// A result that breaks its schema is caught: the validation above is not
// vacuous.
func TestOutputSchemas_RejectWrongResults(t *testing.T) {
	schemas := compile(t, true)
	for name, bad := range map[string]string{
		"search_site":  `{"query": "q", "terms": [], "action": "answer", "confidence": 1, "evidence": "grounded", "results": [{"url": "u"}]}`,
		"verify_quote": `{"found": "yes", "status": "found", "url": "u", "start": 0, "end": 1, "occurrences": 1}`,
		"get_document": `{"url": "u", "title": "t", "type": "page", "published": "yesterday", "modified": "", "mode": "markdown",
			"offsets_into": "markdown", "start": 0, "end": 0, "total_chars": 0, "quality": {}, "evidence": "grounded"}`,
	} {
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(bad))
		if err != nil {
			t.Fatal(err)
		}
		if schemas[name].Validate(inst) == nil {
			t.Errorf("%s: %s passed", name, bad)
		}
	}
}
