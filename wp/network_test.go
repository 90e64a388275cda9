package wp

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/askwp/askwpd/internal/wptest"
)

func TestNetworkFromConfig(t *testing.T) {
	c := &Config{Constants: map[string]string{"MULTISITE": "1", "SUBDOMAIN_INSTALL": "", "DOMAIN_CURRENT_SITE": "Example.org", "PATH_CURRENT_SITE": "/"}}
	n, ok := c.Network()
	if !ok || n.Subdomain || n.Domain != "example.org" || n.Path != "/" || n.MainBlogID != 1 {
		t.Fatalf("Network() = %+v, %v", n, ok)
	}
	c.Constants["SUBDOMAIN_INSTALL"] = "1"
	c.Constants["BLOG_ID_CURRENT_SITE"] = "3"
	if n, _ := c.Network(); !n.Subdomain || n.MainBlogID != 3 {
		t.Fatalf("subdomain network read as %+v", n)
	}
	if _, ok := (&Config{Constants: map[string]string{"WP_ALLOW_MULTISITE": "1"}}).Network(); ok {
		t.Fatal("WP_ALLOW_MULTISITE alone is not a network")
	}
}

// The real network: its config, its sites with their own homes and flags,
// and each site's own tables.
func TestNetworkSites(t *testing.T) {
	net := wptest.GetNetwork(t)
	ctx := context.Background()
	cfg, err := ReadConfig(filepath.Join(net.Root(), "wp-config.php"), net.Host())
	if err != nil {
		t.Fatal(err)
	}
	n, ok := cfg.Network()
	if !ok || n.Subdomain || n.Domain != strings.TrimPrefix(net.URL(), "http://") {
		t.Fatalf("network = %+v, %v; want a subdirectory network at %s", n, ok, net.URL())
	}
	w, err := Open(ctx, cfg.DSN(), cfg.TablePrefix)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if is, err := w.IsNetwork(ctx); err != nil || !is {
		t.Fatalf("IsNetwork = %v, %v", is, err)
	}
	sites, err := w.Sites(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[int64]*NetSite{}
	for _, s := range sites {
		byID[s.BlogID] = s
	}
	for _, want := range net.Sites {
		s := byID[want.BlogID]
		if s == nil {
			t.Fatalf("blog %d missing from %v", want.BlogID, sites)
		}
		if s.Home != want.Home || s.Name != want.Name {
			t.Errorf("blog %d: home %q name %q, want %q %q", s.BlogID, s.Home, s.Name, want.Home, want.Name)
		}
		if s.Indexable() == want.OptedOut {
			t.Errorf("blog %d: indexable %v, opted out %v", s.BlogID, s.Indexable(), want.OptedOut)
		}
		posts, err := w.ForBlog(s.BlogID).Posts(ctx, PostFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var own, others int
		for _, p := range posts {
			if strings.Contains(p.Content, want.PrivateMarker) {
				t.Errorf("blog %d: a private post came back as public: %q", s.BlogID, p.Title)
			}
			if strings.Contains(p.Content, want.PublicMarker) {
				own++
				if p.AuthorName == "" {
					t.Errorf("blog %d: post %d has no author: the users table is the network's", s.BlogID, p.ID)
				}
			}
			for _, o := range net.Sites {
				if o.BlogID != want.BlogID && strings.Contains(p.Content, o.PublicMarker) {
					others++
				}
			}
		}
		if own != 2 || others != 0 {
			t.Errorf("blog %d: %d posts with its marker (want 2: a post and a page), %d with another site's", s.BlogID, own, others)
		}
	}
}
