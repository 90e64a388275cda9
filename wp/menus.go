package wp

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// MenuLink is one entry of a navigation menu: either a URL (custom links,
// block navigation links) or a post the menu points to by ID.
type MenuLink struct {
	URL    string
	PostID int64
	// Kind is "post_type", "taxonomy", "custom" (classic menus) or
	// "navigation" (a block theme's wp_navigation post).
	Kind string
	// Object is the post type or taxonomy the entry points to.
	Object string
}

// MenuLinks reads classic menus (nav_menu_item posts and their
// _menu_item_* meta) and block-theme menus (wp_navigation posts, whose
// block markup carries the links). Only published menu items are read.
func (w *DB) MenuLinks(ctx context.Context) ([]MenuLink, error) {
	rows, err := w.db.QueryContext(ctx, `
		SELECT p.ID,
			coalesce(max(CASE WHEN m.meta_key = '_menu_item_type' THEN m.meta_value END), ''),
			coalesce(max(CASE WHEN m.meta_key = '_menu_item_object' THEN m.meta_value END), ''),
			coalesce(max(CASE WHEN m.meta_key = '_menu_item_object_id' THEN m.meta_value END), ''),
			coalesce(max(CASE WHEN m.meta_key = '_menu_item_url' THEN m.meta_value END), '')
		FROM `+w.t("posts")+` p
		JOIN `+w.t("postmeta")+` m ON m.post_id = p.ID
		WHERE p.post_type = 'nav_menu_item' AND p.post_status = 'publish'
			AND m.meta_key IN ('_menu_item_type', '_menu_item_object', '_menu_item_object_id', '_menu_item_url')
		GROUP BY p.ID ORDER BY p.ID`)
	if err != nil {
		return nil, fmt.Errorf("wp: read menus: %w", err)
	}
	defer rows.Close()
	var out []MenuLink
	for rows.Next() {
		var (
			id                       int64
			kind, object, objID, url string
		)
		if err := rows.Scan(&id, &kind, &object, &objID, &url); err != nil {
			return nil, fmt.Errorf("wp: read menus: %w", err)
		}
		l := MenuLink{Kind: kind, Object: object}
		switch kind {
		case "post_type":
			l.PostID, _ = strconv.ParseInt(objID, 10, 64)
		case "custom":
			l.URL = strings.TrimSpace(url)
		case "taxonomy":
			// Term archives are listings: their URL is computed by
			// WordPress, and discovery reaches them through page links.
			continue
		}
		if l.PostID == 0 && l.URL == "" {
			continue
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("wp: read menus: %w", err)
	}

	nav, err := w.db.QueryContext(ctx, `SELECT post_content FROM `+w.t("posts")+`
		WHERE post_type = 'wp_navigation' AND post_status = 'publish'`)
	if err != nil {
		return nil, fmt.Errorf("wp: read navigation: %w", err)
	}
	defer nav.Close()
	for nav.Next() {
		var content string
		if err := nav.Scan(&content); err != nil {
			return nil, fmt.Errorf("wp: read navigation: %w", err)
		}
		out = append(out, NavigationLinks(content)...)
	}
	if err := nav.Err(); err != nil {
		return nil, fmt.Errorf("wp: read navigation: %w", err)
	}
	return out, nil
}

// navBlockRe matches the opening comment of a navigation link block and
// its JSON attributes: <!-- wp:navigation-link {"label":…,"url":…} /-->.
var navBlockRe = regexp.MustCompile(`<!--\s+wp:(?:core/)?navigation-(?:link|submenu)\s+(\{.*?\})\s+/?-->`)

// NavigationLinks reads the links of a wp_navigation post's block markup.
func NavigationLinks(content string) []MenuLink {
	var out []MenuLink
	for _, m := range navBlockRe.FindAllStringSubmatch(content, -1) {
		var attrs struct {
			URL  string          `json:"url"`
			ID   json.RawMessage `json:"id"`
			Kind string          `json:"kind"`
			Type string          `json:"type"`
		}
		if err := json.Unmarshal([]byte(m[1]), &attrs); err != nil {
			continue
		}
		l := MenuLink{Kind: "navigation", Object: attrs.Type, URL: strings.TrimSpace(attrs.URL)}
		if attrs.Kind == "post-type" || attrs.Kind == "" {
			l.PostID, _ = strconv.ParseInt(strings.Trim(string(attrs.ID), `"`), 10, 64)
		}
		if attrs.Kind == "taxonomy" {
			l.PostID = 0
		}
		if l.URL == "" && l.PostID == 0 {
			continue
		}
		out = append(out, l)
	}
	return out
}

// PostTypes returns the post types that have published posts, internal
// types excluded. The database does not say which are public: the caller
// intersects this with what the sitemap or the REST API list.
func (w *DB) PostTypes(ctx context.Context) ([]string, error) {
	args := make([]any, len(internalTypes))
	for i, t := range internalTypes {
		args[i] = t
	}
	rows, err := w.db.QueryContext(ctx, `SELECT DISTINCT post_type FROM `+w.t("posts")+`
		WHERE post_status = 'publish' AND post_type NOT IN (`+placeholders(len(internalTypes))+`) ORDER BY post_type`, args...)
	if err != nil {
		return nil, fmt.Errorf("wp: read post types: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, fmt.Errorf("wp: read post types: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// TermPosts returns the IDs of posts in any of the terms (term_id, as the
// shim reports them).
func (w *DB) TermPosts(ctx context.Context, termIDs []int64) ([]int64, error) {
	if len(termIDs) == 0 {
		return nil, nil
	}
	args := make([]any, len(termIDs))
	for i, id := range termIDs {
		args[i] = id
	}
	rows, err := w.db.QueryContext(ctx, `SELECT DISTINCT tr.object_id FROM `+w.t("term_relationships")+` tr
		JOIN `+w.t("term_taxonomy")+` tt ON tt.term_taxonomy_id = tr.term_taxonomy_id
		WHERE tt.term_id IN (`+placeholders(len(termIDs))+`) ORDER BY tr.object_id`, args...)
	if err != nil {
		return nil, fmt.Errorf("wp: read term posts: %w", err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("wp: read term posts: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}
