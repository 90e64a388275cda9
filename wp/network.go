package wp

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Network is what wp-config.php says about a multisite network.
type Network struct {
	// Subdomain is SUBDOMAIN_INSTALL: sites at site.example.com rather
	// than example.com/site/.
	Subdomain bool
	// Domain and Path are DOMAIN_CURRENT_SITE and PATH_CURRENT_SITE, the
	// main site's address.
	Domain, Path string
	// MainBlogID is BLOG_ID_CURRENT_SITE, 1 unless the config says else.
	MainBlogID int64
}

// Network reports whether the config makes the install a network
// (MULTISITE true), and how.
func (c *Config) Network() (Network, bool) {
	if !phpTrue(c.Constants["MULTISITE"]) {
		return Network{}, false
	}
	n := Network{
		Subdomain:  phpTrue(c.Constants["SUBDOMAIN_INSTALL"]) || phpTrue(c.Constants["VHOST"]),
		Domain:     strings.ToLower(c.Constants["DOMAIN_CURRENT_SITE"]),
		Path:       c.Constants["PATH_CURRENT_SITE"],
		MainBlogID: 1,
	}
	if id, err := strconv.ParseInt(c.Constants["BLOG_ID_CURRENT_SITE"], 10, 64); err == nil && id > 0 {
		n.MainBlogID = id
	}
	if n.Path == "" {
		n.Path = "/"
	}
	return n, true
}

// phpTrue reads a constant the way PHP tests it: "" and "0" are false.
func phpTrue(s string) bool {
	s = strings.ToLower(strings.TrimSpace(s))
	return s != "" && s != "0" && s != "false"
}

// OptOutOption is the site option the shim sets on a site whose admin
// asked askwpd to leave it alone.
const OptOutOption = "askwpd_exclude"

// NetSite is one site of a network, as its blogs row and its own options
// describe it.
type NetSite struct {
	BlogID int64
	// Domain and Path are the blogs row's; Home is the site's home option,
	// which for a mapped domain names the domain visitors use.
	Domain, Path, Home string
	Name, Tagline      string
	// Public, Archived, Spam, Deleted and OptedOut are the row's flags and
	// the shim's opt-out option; Indexable says whether they allow indexing.
	Public, Archived, Spam, Deleted, OptedOut bool
}

// Indexable reports whether askwpd may index the site: not archived,
// spam, deleted or opted out. A site that asks search engines not to index
// it (public 0) still serves its own visitors' chat, so it is kept.
func (s *NetSite) Indexable() bool {
	return !s.Archived && !s.Spam && !s.Deleted && !s.OptedOut
}

// IsNetwork reports whether the database holds a network's blogs table.
// A config that says MULTISITE with no such table is a broken install
// WordPress itself would refuse.
func (w *DB) IsNetwork(ctx context.Context) (bool, error) {
	var n int
	err := w.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.tables
		WHERE table_schema = DATABASE() AND table_name = ?`, w.base+"blogs").Scan(&n)
	if err != nil {
		return false, w.fail("look for the blogs table", err)
	}
	return n > 0, nil
}

// Sites lists every site of the network with its flags and options, in
// blog id order, whatever their state: the caller decides with Indexable.
func (w *DB) Sites(ctx context.Context) ([]*NetSite, error) {
	rows, err := w.db.QueryContext(ctx, `SELECT blog_id, domain, path, public, archived, spam, deleted
		FROM `+"`"+w.base+"blogs`"+` ORDER BY blog_id`)
	if err != nil {
		return nil, w.fail("read the blogs table", err)
	}
	var sites []*NetSite
	for rows.Next() {
		var (
			s                               NetSite
			public, archived, spam, deleted int
		)
		if err := rows.Scan(&s.BlogID, &s.Domain, &s.Path, &public, &archived, &spam, &deleted); err != nil {
			rows.Close()
			return nil, fmt.Errorf("wp: read the blogs table: %w", err)
		}
		s.Public, s.Archived, s.Spam, s.Deleted = public == 1, archived == 1, spam == 1, deleted == 1
		sites = append(sites, &s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, w.fail("read the blogs table", err)
	}
	for _, s := range sites {
		b := w.ForBlog(s.BlogID)
		info, err := b.Site(ctx)
		if err != nil {
			// A row whose tables are gone (a half-deleted site) is not a site.
			s.Deleted = true
			continue
		}
		s.Name, s.Tagline, s.Home = info.Name, info.Tagline, strings.TrimRight(info.Home, "/")
		opt, err := b.Option(ctx, OptOutOption)
		if err != nil {
			return nil, err
		}
		s.OptedOut = phpTrue(opt)
	}
	return sites, nil
}

// ForBlog returns a reader of one site of the network, sharing this
// one's connections. As wpdb::get_blog_prefix has it, blog 1's tables
// carry the base prefix and every other site's {prefix}{blog_id}_; the
// users tables are the network's.
func (w *DB) ForBlog(blogID int64) *DB {
	prefix := w.base
	if blogID != 1 {
		prefix = w.base + strconv.FormatInt(blogID, 10) + "_"
	}
	return &DB{db: w.db, prefix: prefix, base: w.base, addr: w.addr}
}

// NetworkOption returns one of the network's own options (sitemeta, what
// get_site_option reads), or "" when it is absent.
func (w *DB) NetworkOption(ctx context.Context, name string) (string, error) {
	var v string
	err := w.db.QueryRowContext(ctx, "SELECT meta_value FROM `"+w.base+"sitemeta` WHERE meta_key = ? ORDER BY meta_id LIMIT 1", name).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", w.fail("read network option "+name, err)
	}
	return v, nil
}
