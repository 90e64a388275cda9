package cluster

import (
	"context"
	"fmt"
	"regexp"
	"strings"
)

// The tables live in the WordPress database, next to the site's own, under
// its table prefix: {prefix}askwpd_{name_}events, …_changelog and …_lease.
// Name is empty for the one cluster a site has; tests give each run its
// own, so that runs against one database never see each other's rows.
//
// All of the SQL that creates them is here, and the shim's INSERT into the
// events table (wp-plugin-shim/includes/class-askwpd-cluster.php) follows
// the events table below.
const (
	// events is written by the shim, in the request that saved the post,
	// and by any daemon that receives a webhook (INSERT IGNORE on
	// event_id, so the shim's row and its ping are one event). The leader
	// consumes rows with done = 0 in id order and sets done in the same
	// transaction as the changelog rows its work produced. A done flag,
	// not a cursor, because AUTO_INCREMENT ids are not committed in id
	// order: two saves at once can commit 11 before 10, and a cursor
	// that moved past 11 would never see 10. Under Galera ids even skip by
	// design (auto_increment_increment).
	createEvents = "CREATE TABLE IF NOT EXISTS `%s` (" + `
		id         BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
		event_id   VARCHAR(64) NOT NULL,
		event      MEDIUMTEXT NOT NULL,
		created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
		done       TINYINT NOT NULL DEFAULT 0,
		done_at    DATETIME(6) NULL,
		PRIMARY KEY (id),
		UNIQUE KEY event_id (event_id),
		KEY pending (done, id)
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci`

	// changelog holds each document the leader indexed (op 'P', doc is
	// the gzipped JSON of the store.Document) or removed (op 'D', a
	// tombstone with no doc). id is given by the publisher from the lease
	// row's seq, in the transaction that checks the lease, so ids are
	// committed in order and a reader tailing id > n misses nothing. A
	// row is deleted when a newer one for its URL is written (url_hash),
	// so the table holds about one row per page the site has had.
	createChangelog = "CREATE TABLE IF NOT EXISTS `%s` (" + `
		id         BIGINT UNSIGNED NOT NULL,
		url_hash   BINARY(32) NOT NULL,
		url        TEXT NOT NULL,
		op         CHAR(1) NOT NULL,
		version    BINARY(32) NOT NULL,
		doc        MEDIUMBLOB NULL,
		node       VARCHAR(64) NOT NULL,
		created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
		PRIMARY KEY (id),
		KEY url_hash (url_hash, id)
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci`

	// lease is one row: who leads until when, by the database's clock
	// (NOW(6)), so the nodes' clocks need not agree. seq is the last
	// changelog id; epoch names this set of tables, so a node whose
	// SQLite remembers a cursor into tables since dropped starts over.
	createLease = "CREATE TABLE IF NOT EXISTS `%s` (" + `
		name        VARCHAR(32) NOT NULL,
		holder      VARCHAR(64) NOT NULL DEFAULT '',
		host        VARCHAR(255) NOT NULL DEFAULT '',
		expires_at  DATETIME(6) NOT NULL,
		acquired_at DATETIME(6) NOT NULL,
		seq         BIGINT UNSIGNED NOT NULL DEFAULT 0,
		epoch       VARCHAR(32) NOT NULL,
		PRIMARY KEY (name)
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci`

	// leaseName is the lease row's key; one row per set of tables.
	leaseName = "leader"
)

// Tables are the names of one cluster's tables.
type Tables struct {
	Events, Changelog, Lease string
}

var identRe = regexp.MustCompile(`^[A-Za-z0-9_]{1,40}$`)

// ValidName reports whether name may be a cluster's name: empty, or
// letters, digits and underscores, short enough for the table names.
func ValidName(name string) bool { return name == "" || len(name) <= 24 && identRe.MatchString(name) }

// TablesFor names the tables of cluster name under a WordPress table
// prefix. Neither can be a placeholder, so both are checked here.
func TablesFor(prefix, name string) (Tables, error) {
	if !identRe.MatchString(prefix) {
		return Tables{}, fmt.Errorf("cluster: table prefix %q is not a plain identifier", prefix)
	}
	if !ValidName(name) {
		return Tables{}, fmt.Errorf("cluster: name %q: use letters, digits and _ (at most 24)", name)
	}
	base := prefix + "askwpd_"
	if name != "" {
		base += strings.ToLower(name) + "_"
	}
	return Tables{Events: base + "events", Changelog: base + "changelog", Lease: base + "lease"}, nil
}

// create makes the tables when they are missing, and the lease row.
func (c *Cluster) create(ctx context.Context) error {
	for _, q := range []string{
		fmt.Sprintf(createEvents, c.t.Events),
		fmt.Sprintf(createChangelog, c.t.Changelog),
		fmt.Sprintf(createLease, c.t.Lease),
	} {
		if err := retryRace(ctx, func() error { _, err := c.db.ExecContext(ctx, q); return err }); err != nil {
			return fmt.Errorf("create tables: %w", err)
		}
	}
	// INSERT IGNORE: every node runs this at start; the first one's row,
	// and its epoch, stay. On Galera, nodes started together insert at
	// once and all but one lose the race; their retry finds the row.
	err := retryRace(ctx, func() error {
		_, err := c.db.ExecContext(ctx, "INSERT IGNORE INTO `"+c.t.Lease+"` (name, holder, expires_at, acquired_at, seq, epoch)"+
			` VALUES (?, '', '1970-01-02', '1970-01-02', 0, ?)`, leaseName, randomID(8))
		return err
	})
	if err != nil {
		return fmt.Errorf("create lease row: %w", err)
	}
	return nil
}

// Drop removes the cluster's tables (tests, and turning cluster mode off
// for good).
func (c *Cluster) Drop(ctx context.Context) error {
	_, err := c.db.ExecContext(ctx, "DROP TABLE IF EXISTS `"+c.t.Events+"`, `"+c.t.Changelog+"`, `"+c.t.Lease+"`")
	if err != nil {
		return fmt.Errorf("cluster: drop tables: %w", err)
	}
	return nil
}
