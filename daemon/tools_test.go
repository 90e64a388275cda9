package daemon

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"testing"

	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/internal/wptest"
	"github.com/askwp/askwpd/tool"
)

// toolsDaemon is the shared daemon over the indexed test site.
func toolsDaemon(t *testing.T) (*Daemon, *wptest.Site) { return indexedDaemon(t) }

// call runs a tool and decodes its result into out.
func call(t *testing.T, d *Daemon, name string, args any, out any) {
	t.Helper()
	raw, _ := json.Marshal(args)
	res, err := d.Call(context.Background(), name, raw)
	if err != nil {
		t.Fatalf("%s %s: %v", name, raw, err)
	}
	b, _ := json.Marshal(res)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: decode: %v", name, err)
	}
}

// unindexSeeded deletes the seeded page at path from the index for the
// test, and fetches it back when the test ends. It returns its URL.
func unindexSeeded(t *testing.T, d *Daemon, path string) string {
	t.Helper()
	ctx := context.Background()
	target := d.Crawler.Site.URL + path
	if _, err := d.Store.FindDocument(ctx, target, false); err != nil {
		// CI's site is seeded with the page: its absence there is a failure.
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not indexed on this site: %v", target, err)
		}
		t.Skipf("%s is not indexed on this site: %v", target, err)
	}
	if _, err := d.Store.DeleteDocument(ctx, target); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Crawler.FetchNow(context.Background(), target, "test") })
	return target
}

// slotProbe is the fetcher's transport, counting while it fetches target
// how many tool slots another caller could take.
type slotProbe struct {
	next   http.RoundTripper
	d      *Daemon
	target string
	free   chan int
}

func (p *slotProbe) RoundTrip(r *http.Request) (*http.Response, error) {
	// The fetch carries the cache bypass token: the page is its URL without it.
	if crawl.Canonical(r.URL.String()) == crawl.Canonical(p.target) {
		n := 0
	fill:
		for {
			select {
			case p.d.slots <- struct{}{}:
				n++
			default:
				break fill
			}
		}
		for range n {
			<-p.d.slots
		}
		select {
		case p.free <- n:
		default:
		}
	}
	return p.next.RoundTrip(r)
}

// A search that expands waits on the site without its slot: while the
// page is fetched, every slot is free for other searches.
func TestTools_ExpansionWaitsWithoutItsSlot(t *testing.T) {
	d, _ := toolsDaemon(t)
	target := unindexSeeded(t, d, "/pricing-faq/")
	cl := d.Crawler.Fetcher.Client
	probe := &slotProbe{next: cl.Transport, d: d, target: target, free: make(chan int, 1)}
	cl.Transport = probe
	t.Cleanup(func() { cl.Transport = probe.next })

	var r tool.SearchResponse
	call(t, d, "search_site", map[string]any{"query": "pricing frequently asked questions"}, &r)
	select {
	case n := <-probe.free:
		if n != cap(d.slots) {
			t.Errorf("while expansion fetched %s, %d of %d slots were free: the call kept one", target, n, cap(d.slots))
		}
	default:
		t.Fatalf("expansion did not fetch %s: %+v (stop %s)", target, r.Expanded, r.ExpansionStop)
	}
	if len(d.slots) != 0 {
		t.Errorf("%d slots still taken after the call", len(d.slots))
	}
}

func firstURL(r tool.SearchResponse) string {
	if len(r.Results) == 0 {
		return "(none)"
	}
	return r.Results[0].URL
}
