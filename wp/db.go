package wp

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// DB reads a WordPress database. It only ever reads.
type DB struct {
	db     *sql.DB
	prefix string
	// base is the network's prefix, which its users tables keep; the same
	// as prefix outside a network and for its first site.
	base string
	addr string
}

// ErrUnreachable marks a query that failed because the database could
// not be reached (down, restarting, or the network in between), not
// because of anything about the site: the caller retries later.
var ErrUnreachable = errors.New("database unreachable")

// fail wraps a query's error, saying so when the database is unreachable.
func (w *DB) fail(what string, err error) error {
	var oe *net.OpError
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) || errors.As(err, &oe) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("wp: %s: %w at %s: %w", what, ErrUnreachable, w.addr, err)
	}
	return fmt.Errorf("wp: %s: %w", what, err)
}

// Post is a WordPress post row as askwpd needs it.
type Post struct {
	ID        int64
	Type      string
	Status    string
	Name      string // the slug
	Title     string
	Content   string
	Excerpt   string
	Parent    int64
	Published time.Time // post_date_gmt; zero for drafts
	// Date is post_date, the site's local time, which permalinks spell
	// (read as if it were UTC: only its fields count).
	Date       time.Time
	Modified   time.Time // post_modified_gmt
	AuthorName string
	// HasPassword is true for password-protected posts; Public is true only
	// for status "publish" without a password.
	HasPassword bool
	Categories  []string
	Tags        []string
}

// Public reports whether the post may be indexed.
func (p *Post) Public() bool { return p.Status == "publish" && !p.HasPassword }

// internalTypes are post types that never have a public page of their own.
var internalTypes = []string{
	"attachment", "revision", "nav_menu_item", "custom_css", "customize_changeset", "oembed_cache",
	"user_request", "wp_block", "wp_template", "wp_template_part", "wp_global_styles", "wp_navigation",
	"wp_font_family", "wp_font_face",
}

// Open connects with a go-sql-driver DSN and checks the connection and the
// tables. prefix is $table_prefix.
func Open(ctx context.Context, dsn, prefix string) (*DB, error) {
	if !validPrefix(prefix) {
		return nil, fmt.Errorf("wp: table prefix %q is not a plain identifier", prefix)
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("wp: bad database DSN: %w", err)
	}
	cfg.ParseTime = true
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("wp: bad database DSN: %w", err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(2)
	db.SetConnMaxIdleTime(time.Minute)
	w := &DB{db: db, prefix: prefix, base: prefix, addr: cfg.Addr}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("wp: cannot connect to the WordPress database %s as %s at %s (check DB_USER/DB_PASSWORD/DB_HOST): %w",
			cfg.DBName, cfg.User, cfg.Addr, err)
	}
	if _, err := w.Option(pctx, "siteurl"); err != nil {
		db.Close()
		return nil, fmt.Errorf("wp: database %s has no readable %soptions table (check $table_prefix): %w", cfg.DBName, prefix, err)
	}
	return w, nil
}

// Close closes the connection pool.
func (w *DB) Close() error { return w.db.Close() }

// Ping checks the connection.
func (w *DB) Ping(ctx context.Context) error { return w.db.PingContext(ctx) }

func (w *DB) t(name string) string {
	if name == "users" || name == "usermeta" {
		return "`" + w.base + name + "`"
	}
	return "`" + w.prefix + name + "`"
}

// Option returns one row of the options table, or "" when it is absent.
func (w *DB) Option(ctx context.Context, name string) (string, error) {
	var v string
	err := w.db.QueryRowContext(ctx, `SELECT option_value FROM `+w.t("options")+` WHERE option_name = ? LIMIT 1`, name).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", w.fail("read option "+name, err)
	}
	return v, nil
}

// PostFilter selects posts.
type PostFilter struct {
	// Types limits the post types; empty means every type that can have a
	// public page.
	Types []string
	// ModifiedSince, when set, returns only posts modified at or after it.
	ModifiedSince time.Time
	// IDs, when set, returns only these posts, whatever their status; the
	// caller checks Public().
	IDs []int64
	// AnyStatus returns non-public posts too (never for indexing: for
	// telling an event's post is gone).
	AnyStatus bool
	Limit     int
	// Light leaves Content and Excerpt empty: a whole site's posts held
	// for discovery would otherwise cost their full text in memory.
	Light bool
}

const postCols = `p.ID, p.post_type, p.post_status, p.post_name, p.post_title, p.post_content, p.post_excerpt,
	p.post_parent, p.post_date_gmt, p.post_modified_gmt, p.post_password != '', coalesce(u.display_name, ''), p.post_date`

// Posts returns posts matching f. Unless AnyStatus or IDs is set, only
// published posts without a password are returned.
func (w *DB) Posts(ctx context.Context, f PostFilter) ([]*Post, error) {
	var (
		where []string
		args  []any
	)
	if len(f.IDs) == 0 && !f.AnyStatus {
		where = append(where, `p.post_status = 'publish'`, `p.post_password = ''`)
	}
	if len(f.Types) > 0 {
		where = append(where, `p.post_type IN (`+placeholders(len(f.Types))+`)`)
		for _, t := range f.Types {
			args = append(args, t)
		}
	} else {
		where = append(where, `p.post_type NOT IN (`+placeholders(len(internalTypes))+`)`)
		for _, t := range internalTypes {
			args = append(args, t)
		}
	}
	if len(f.IDs) > 0 {
		where = append(where, `p.ID IN (`+placeholders(len(f.IDs))+`)`)
		for _, id := range f.IDs {
			args = append(args, id)
		}
	}
	if !f.ModifiedSince.IsZero() {
		where = append(where, `p.post_modified_gmt >= ?`)
		args = append(args, f.ModifiedSince.UTC().Format("2006-01-02 15:04:05"))
	}
	cols := postCols
	if f.Light {
		cols = strings.Replace(cols, `p.post_content, p.post_excerpt`, `'', ''`, 1)
	}
	q := `SELECT ` + cols + ` FROM ` + w.t("posts") + ` p LEFT JOIN ` + w.t("users") + ` u ON u.ID = p.post_author
		WHERE ` + strings.Join(where, " AND ") + ` ORDER BY p.post_modified_gmt DESC, p.ID DESC`
	if f.Limit > 0 {
		q += fmt.Sprintf(` LIMIT %d`, f.Limit)
	}
	rows, err := w.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, w.fail("read posts", err)
	}
	defer rows.Close()
	var posts []*Post
	byID := map[int64]*Post{}
	for rows.Next() {
		var (
			p             Post
			pub, mod, loc sql.NullString
		)
		if err := rows.Scan(&p.ID, &p.Type, &p.Status, &p.Name, &p.Title, &p.Content, &p.Excerpt,
			&p.Parent, &pub, &mod, &p.HasPassword, &p.AuthorName, &loc); err != nil {
			return nil, fmt.Errorf("wp: read posts: %w", err)
		}
		p.Published, p.Modified, p.Date = parseWPTime(pub.String), parseWPTime(mod.String), parseWPTime(loc.String)
		posts = append(posts, &p)
		byID[p.ID] = &p
	}
	if err := rows.Err(); err != nil {
		return nil, w.fail("read posts", err)
	}
	if err := w.loadTerms(ctx, byID); err != nil {
		return nil, err
	}
	return posts, nil
}

// parseWPTime reads a DATETIME column scanned as text. Drafts carry
// "0000-00-00 00:00:00", which is no date at all.
func parseWPTime(s string) time.Time {
	if s == "" || strings.HasPrefix(s, "0000") {
		return time.Time{}
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05", "2006-01-02T15:04:05Z"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			if t.Year() < 1971 { // the driver's zero time for 0000-00-00
				return time.Time{}
			}
			return t.UTC()
		}
	}
	return time.Time{}
}

func (w *DB) loadTerms(ctx context.Context, byID map[int64]*Post) error {
	if len(byID) == 0 {
		return nil
	}
	ids := make([]any, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	// Chunked so a 100k-post site doesn't build one giant IN list.
	for start := 0; start < len(ids); start += 1000 {
		end := min(start+1000, len(ids))
		part := ids[start:end]
		rows, err := w.db.QueryContext(ctx, `
			SELECT tr.object_id, tt.taxonomy, t.name
			FROM `+w.t("term_relationships")+` tr
			JOIN `+w.t("term_taxonomy")+` tt ON tt.term_taxonomy_id = tr.term_taxonomy_id
			JOIN `+w.t("terms")+` t ON t.term_id = tt.term_id
			WHERE tt.taxonomy IN ('category', 'post_tag') AND tr.object_id IN (`+placeholders(len(part))+`)
			ORDER BY t.name`, part...)
		if err != nil {
			return w.fail("read terms", err)
		}
		for rows.Next() {
			var (
				id        int64
				tax, name string
			)
			if err := rows.Scan(&id, &tax, &name); err != nil {
				rows.Close()
				return fmt.Errorf("wp: read terms: %w", err)
			}
			p := byID[id]
			if tax == "category" {
				p.Categories = append(p.Categories, name)
			} else {
				p.Tags = append(p.Tags, name)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return w.fail("read terms", err)
		}
	}
	return nil
}

// SiteInfo is the site's name, tagline and addresses from the options.
type SiteInfo struct {
	Name, Tagline, Home, SiteURL, PermalinkStructure string
	// PageOnFront and PageForPosts are the static front page and posts
	// page IDs when the site uses them.
	PageOnFront, PageForPosts int64
}

// Site reads the site's options.
func (w *DB) Site(ctx context.Context) (SiteInfo, error) {
	var s SiteInfo
	rows, err := w.db.QueryContext(ctx, `SELECT option_name, option_value FROM `+w.t("options")+`
		WHERE option_name IN ('blogname', 'blogdescription', 'home', 'siteurl', 'permalink_structure', 'page_on_front', 'page_for_posts', 'show_on_front')`)
	if err != nil {
		return s, w.fail("read site options", err)
	}
	defer rows.Close()
	showOnFront := ""
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return s, fmt.Errorf("wp: read site options: %w", err)
		}
		switch k {
		case "blogname":
			s.Name = v
		case "blogdescription":
			s.Tagline = v
		case "home":
			s.Home = v
		case "siteurl":
			s.SiteURL = v
		case "permalink_structure":
			s.PermalinkStructure = v
		case "page_on_front":
			fmt.Sscan(v, &s.PageOnFront)
		case "page_for_posts":
			fmt.Sscan(v, &s.PageForPosts)
		case "show_on_front":
			showOnFront = v
		}
	}
	if showOnFront != "page" {
		s.PageOnFront, s.PageForPosts = 0, 0
	}
	if s.Home == "" {
		s.Home = s.SiteURL
	}
	return s, rows.Err()
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

// OpenWriter opens a second, small pool on the WordPress database for the
// one part of askwpd that writes there: cluster mode's own tables
// (package cluster). DB stays read-only; this pool is handed over as a
// plain *sql.DB so that the MySQL driver stays in this package.
func OpenWriter(ctx context.Context, dsn string) (*sql.DB, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("wp: bad database DSN: %w", err)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	// DATETIME columns as UTC times, whatever the server's zone.
	cfg.ParseTime, cfg.Loc = true, time.UTC
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["time_zone"] = "'+00:00'"
	// Statements are short; a stalled one must not hold the leader past
	// its lease.
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = 10 * time.Second
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = 10 * time.Second
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("wp: bad database DSN: %w", err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	db.SetConnMaxIdleTime(time.Minute)
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("wp: cannot connect to the WordPress database %s at %s: %w", cfg.DBName, cfg.Addr, err)
	}
	return db, nil
}
