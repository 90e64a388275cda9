package api_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/askwp/askwpd/tool"
)

// TestTools_OutputSchemas calls every tool over HTTP on the indexed test
// WordPress and requires each answer to satisfy the tool's output schema
// (tool.Tools, exported to the plugin), read as JSON Schema 2020-12: the
// schemas MCP clients and WordPress's abilities check results against.
func TestTools_OutputSchemas(t *testing.T) {
	d, ts := e2eDaemon(t)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	schemas := map[string]*jsonschema.Schema{}
	for _, tl := range tool.Tools {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(tl.OutputSchema))
		if err != nil {
			t.Fatal(err)
		}
		loc := "mem:///" + tl.Function.Name + ".json"
		if err := c.AddResource(loc, doc); err != nil {
			t.Fatal(err)
		}
		if schemas[tl.Function.Name], err = c.Compile(loc); err != nil {
			t.Fatalf("%s: %v", tl.Function.Name, err)
		}
	}
	check := func(name string, args map[string]any) map[string]any {
		t.Helper()
		code, out := httpTool(t, ts, name, args)
		if code != 200 {
			t.Fatalf("%s %v: HTTP %d %v", name, args, code, out)
		}
		raw, _ := json.Marshal(out)
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		if err := schemas[name].Validate(inst); err != nil {
			t.Errorf("%s %v: the result does not satisfy the output schema: %v\n%.2000s", name, args, err, raw)
		}
		m, _ := out.(map[string]any)
		return m
	}

	site := d.Crawler.Site.URL
	res := check("search_site", map[string]any{"query": "espresso grinder retention"})
	check("search_site", map[string]any{"query": "backup", "passages": true, "limit": 3})
	check("search_site", map[string]any{"query": "workshop", "filters": map[string]any{"type": "page"}, "sort": "date"})
	check("search_site", map[string]any{"query": "qwxzv blorft"})
	check("get_recent", map[string]any{"type": "any", "limit": 10})
	for _, mode := range []string{"markdown", "text", "outline", "chunks"} {
		check("get_document", map[string]any{"id_or_url": site + "/pricing-faq/", "mode": mode, "max_chars": 400})
	}
	check("get_document", map[string]any{"id_or_url": site + "/workshops/"})
	check("search_in_document", map[string]any{"id_or_url": site + "/pricing-faq/", "query": "price"})
	check("fetch_live_url", map[string]any{"url": site + "/pricing-faq/"})
	check("fetch_live_url", map[string]any{"url": "https://example.org/"})
	check("fetch_live_url", map[string]any{"url": site + "/no-such-page-here/"})
	check("verify_quote", map[string]any{"url": site + "/workshops/", "quote": "Coming soon."})
	check("verify_quote", map[string]any{"url": site + "/nowhere/", "quote": "x"})
	results, _ := res["results"].([]any)
	if len(results) == 0 {
		t.Fatalf("no results to verify: %v", res)
	}
	hit := results[0].(map[string]any)
	q := check("verify_quote", map[string]any{"url": hit["url"], "quote": hit["passage"]})
	if q["found"] != true {
		t.Errorf("the first hit's passage does not verify: %v", q)
	}
}
