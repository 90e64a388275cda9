<?php
/**
 * The outbox: change events the daemon did not take, kept in a table of their own until
 * it does.
 *
 * An event that fails or times out is stored here, one row per post (or term, or site
 * event): a newer event for the same thing replaces the older one, with a new event ID,
 * since the daemon reads the post's state anyway and only the last one matters. The rows
 * go out, oldest first, in signed batches of Askwpd_Webhooks::BATCH, from the shutdown of
 * a later request or from WP-Cron, with a backoff between failed attempts. The daemon
 * refuses an event ID it already stored as a replay; such an event was delivered, so its
 * row is deleted, not retried.
 *
 * Bounded: at most max_rows() rows. Past the bound, new events are not stored but
 * counted; once the outbox has drained, the shim asks the daemon for a full reindex,
 * which covers whatever those events said, and the admin page and Site Health say so
 * meanwhile.
 *
 * The small state (depth, next attempt, failures, overflow) is one autoloaded option, so
 * that a request learns whether anything is waiting without a query.
 *
 * The queries go straight to the database (Plugin Check's DirectDatabaseQuery exceptions,
 * marked at each): the outbox and the counters are this plugin's own tables, which
 * concurrent requests write, and each reader needs what is there now, not what an object
 * cache kept; for the same reason the state option is reread from its table when it
 * changes.
 *
 * @package askwpd-companion
 */

if ( ! defined( 'ABSPATH' ) ) {
	exit;
}

final class Askwpd_Outbox {

	const DB_VERSION        = 1;
	const DB_VERSION_OPTION = 'askwpd_companion_db_version';
	const STATE_OPTION      = 'askwpd_companion_outbox';
	const CRON_HOOK         = 'askwpd_outbox_retry';
	const LOCK              = 'outbox_lock';
	const LOCK_SECONDS      = 60;
	const BACKOFF_MAX       = 30;

	public static function init(): void {
		add_action( 'plugins_loaded', array( __CLASS__, 'maybe_install' ), 5 );
		add_action( self::CRON_HOOK, array( __CLASS__, 'cron' ) );
		add_action( 'shutdown', array( __CLASS__, 'on_shutdown' ), 101, 0 );
	}

	public static function table(): string {
		global $wpdb;
		return $wpdb->prefix . 'askwpd_outbox';
	}

	/** The table of atomic counters: the chat rate limit and the outbox's lock. */
	public static function counters_table(): string {
		global $wpdb;
		return $wpdb->prefix . 'askwpd_counters';
	}

	/** Creates or upgrades the tables (on activation, and on sites that had the plugin active before). */
	public static function install(): void {
		global $wpdb;
		require_once ABSPATH . 'wp-admin/includes/upgrade.php';
		$charset = $wpdb->get_charset_collate();
		dbDelta(
			'CREATE TABLE ' . self::table() . " (
  id bigint(20) unsigned NOT NULL AUTO_INCREMENT,
  ekey varchar(191) NOT NULL,
  event_id varchar(64) NOT NULL,
  event longtext NOT NULL,
  queued_at int(10) unsigned NOT NULL,
  PRIMARY KEY  (id),
  UNIQUE KEY ekey (ekey)
) $charset;"
		);
		dbDelta(
			'CREATE TABLE ' . self::counters_table() . " (
  name char(64) NOT NULL,
  window_start int(10) unsigned NOT NULL,
  hits int(10) unsigned NOT NULL,
  PRIMARY KEY  (name)
) $charset;"
		);
		update_option( self::DB_VERSION_OPTION, self::DB_VERSION, true );
	}

	public static function maybe_install(): void {
		if ( (int) get_option( self::DB_VERSION_OPTION ) !== self::DB_VERSION ) {
			self::install();
		}
	}

	/** The bound on rows; filterable for small hosts. */
	public static function max_rows(): int {
		return max( 1, (int) apply_filters( 'askwpd_outbox_max_rows', 5000 ) );
	}

	/** depth, next (Unix time of the next attempt), fails (in a row), error, overflow (events not stored), drained_at and drain_ms (the last backlog sent), tried_at (the last attempt that sent anything). */
	public static function state(): array {
		$s = get_option( self::STATE_OPTION );
		return ( is_array( $s ) ? $s : array() ) + array(
			'depth'      => 0,
			'next'       => 0,
			'fails'      => 0,
			'error'      => '',
			'overflow'   => 0,
			'drained_at' => 0.0,
			'drain_ms'   => 0.0,
			'tried_at'   => 0.0,
		);
	}

	/**
	 * The state as the database has it now. Whoever changes the state reads it this way:
	 * a request's options were loaded when it began, and another request (a drain, say)
	 * may have written since.
	 */
	private static function fresh_state(): array {
		global $wpdb;
		$raw = $wpdb->get_var( $wpdb->prepare( "SELECT option_value FROM $wpdb->options WHERE option_name = %s", self::STATE_OPTION ) ); // phpcs:ignore WordPress.DB.DirectDatabaseQuery -- see the class comment.
		wp_cache_delete( self::STATE_OPTION, 'options' );
		// A request that looked for the option before any existed keeps it in notoptions,
		// and get_option would answer the defaults from there: its drain found nothing
		// left to send and saved those, wiping the last drain's times and failures.
		$not = wp_cache_get( 'notoptions', 'options' );
		if ( is_array( $not ) && isset( $not[ self::STATE_OPTION ] ) ) {
			unset( $not[ self::STATE_OPTION ] );
			wp_cache_set( 'notoptions', $not, 'options' );
		}
		$all = wp_cache_get( 'alloptions', 'options' );
		if ( is_array( $all ) ) {
			$all[ self::STATE_OPTION ] = $raw;
			wp_cache_set( 'alloptions', $all, 'options' );
		}
		return self::state();
	}

	private static function save_state( array $s ): void {
		update_option( self::STATE_OPTION, $s, true );
	}

	public static function depth(): int {
		return (int) self::state()['depth'];
	}

	/** Whether rows wait and their next attempt is now. */
	public static function due(): bool {
		$s = self::state();
		return ( $s['depth'] > 0 || $s['overflow'] > 0 ) && (int) $s['next'] <= time();
	}

	/** The coalescing key of a wire event: one row per post, per term, per site event. */
	private static function key_of( array $ev ): string {
		if ( isset( $ev['post_id'] ) && 0 === strpos( (string) $ev['type'], 'post_' ) ) {
			return 'post:' . (int) $ev['post_id'];
		}
		if ( 'term_changed' === $ev['type'] ) {
			return 'term:' . $ev['taxonomy'] . ':' . (int) $ev['term_id'];
		}
		return 'site:' . $ev['type'];
	}

	/**
	 * Stores events, each replacing the waiting one for the same post, term or site event.
	 * A term event keeps the posts the one it replaces named.
	 *
	 * @param array $events Wire events.
	 */
	public static function add( array $events ): void {
		global $wpdb;
		if ( ! $events ) {
			return;
		}
		self::maybe_install();
		$t     = self::table();
		$depth = (int) $wpdb->get_var( "SELECT COUNT(*) FROM $t" ); // phpcs:ignore WordPress.DB.PreparedSQL.InterpolatedNotPrepared,WordPress.DB.DirectDatabaseQuery -- our table name.
		$max   = self::max_rows();
		$lost  = 0;
		foreach ( $events as $ev ) {
			$key = self::key_of( $ev );
			if ( 'term_changed' === $ev['type'] ) {
				$old = $wpdb->get_var( $wpdb->prepare( "SELECT event FROM $t WHERE ekey = %s", $key ) ); // phpcs:ignore WordPress.DB.PreparedSQL.InterpolatedNotPrepared,WordPress.DB.DirectDatabaseQuery -- see the class comment.
				$old = is_string( $old ) ? json_decode( $old, true ) : null;
				if ( is_array( $old ) && isset( $old['post_ids'] ) ) {
					$ev['post_ids'] = array_slice( array_values( array_unique( array_merge( (array) $old['post_ids'], (array) $ev['post_ids'] ) ) ), 0, 1000 );
				}
			}
			$json = (string) wp_json_encode( $ev, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE );
			if ( $depth >= $max ) {
				// Only a replacement fits; a new row would pass the bound.
				$n = $wpdb->query( $wpdb->prepare( "UPDATE $t SET event_id = %s, event = %s WHERE ekey = %s", $ev['id'], $json, $key ) ); // phpcs:ignore WordPress.DB.PreparedSQL.InterpolatedNotPrepared,WordPress.DB.DirectDatabaseQuery -- see the class comment.
				if ( ! $n ) {
					++$lost;
				}
				continue;
			}
			$wpdb->query( // phpcs:ignore WordPress.DB.PreparedSQL.InterpolatedNotPrepared,WordPress.DB.DirectDatabaseQuery -- see the class comment.
				$wpdb->prepare(
					"INSERT INTO $t (ekey, event_id, event, queued_at) VALUES (%s, %s, %s, %d)
					ON DUPLICATE KEY UPDATE event_id = VALUES(event_id), event = VALUES(event)",
					$key,
					$ev['id'],
					$json,
					time()
				)
			);
			if ( 1 === (int) $wpdb->rows_affected ) {
				++$depth; // 1 is an insert; 2 a replacement.
			}
		}
		// Read just before the write, which changes only what this request knows: a drain
		// may have recorded its attempt meanwhile.
		$s              = self::fresh_state();
		$s['depth']     = $depth;
		$s['overflow'] += $lost;
		self::save_state( $s );
		self::schedule( (int) $s['next'] );
	}

	/**
	 * Makes sure WP-Cron retries at $when, for sites without traffic. An event due
	 * earlier is moved too: it would find the backoff not over and only reschedule.
	 */
	private static function schedule( int $when ): void {
		$when = max( $when, time() );
		$next = wp_next_scheduled( self::CRON_HOOK );
		if ( false === $next || $next !== $when ) {
			if ( false !== $next ) {
				wp_unschedule_event( $next, self::CRON_HOOK );
			}
			wp_schedule_single_event( $when, self::CRON_HOOK );
		}
	}

	public static function cron(): void {
		if ( self::due() ) {
			self::drain( 10, true );
		} elseif ( self::depth() > 0 ) {
			self::schedule( (int) self::state()['next'] );
		}
	}

	/**
	 * shutdown: a request that queued nothing of its own retries what waits, when its time
	 * has come. Under php-fpm the visitor has the page before the attempt starts.
	 */
	public static function on_shutdown(): void {
		if ( ! self::due() || Askwpd_Webhooks::sent_this_request() ) {
			return;
		}
		$background = wp_doing_cron();
		if ( function_exists( 'fastcgi_finish_request' ) && ! $background ) {
			$background = fastcgi_finish_request();
		}
		self::drain( 10, $background );
	}

	// --- the lock ------------------------------------------------------------------------

	/** One drainer at a time, site-wide: an atomic UPDATE on a row that expires. */
	private static function lock(): bool {
		global $wpdb;
		$t   = self::counters_table();
		$now = time();
		$wpdb->query( $wpdb->prepare( "INSERT IGNORE INTO $t (name, window_start, hits) VALUES (%s, 0, 0)", self::LOCK ) ); // phpcs:ignore WordPress.DB.PreparedSQL.InterpolatedNotPrepared,WordPress.DB.DirectDatabaseQuery -- see the class comment.
		$n = $wpdb->query( $wpdb->prepare( "UPDATE $t SET window_start = %d WHERE name = %s AND window_start <= %d", $now + self::LOCK_SECONDS, self::LOCK, $now ) ); // phpcs:ignore WordPress.DB.PreparedSQL.InterpolatedNotPrepared,WordPress.DB.DirectDatabaseQuery -- see the class comment.
		return 1 === (int) $n;
	}

	private static function unlock(): void {
		global $wpdb;
		$t = self::counters_table();
		$wpdb->query( $wpdb->prepare( "UPDATE $t SET window_start = 0 WHERE name = %s", self::LOCK ) ); // phpcs:ignore WordPress.DB.PreparedSQL.InterpolatedNotPrepared,WordPress.DB.DirectDatabaseQuery -- see the class comment.
	}

	// --- draining --------------------------------------------------------------------------

	/**
	 * Sends what waits, oldest first, in batches, until it is empty, a batch fails, or
	 * $max_batches went out. Does nothing while another request drains.
	 *
	 * @param int  $max_batches Batches at most.
	 * @param bool $background  Nobody waits on this request any more (WP-Cron, or after
	 *                          fastcgi_finish_request): a batch may take longer.
	 * @return array One result per request (status, error, ms).
	 */
	public static function drain( int $max_batches = 10, bool $background = false ): array {
		global $wpdb;
		self::maybe_install();
		if ( ! self::lock() ) {
			return array();
		}
		$t       = self::table();
		$started = microtime( true );
		$results = array();
		$failed  = null;
		try {
			for ( $i = 0; $i < $max_batches && null === $failed; $i++ ) {
				$rows = $wpdb->get_results( $wpdb->prepare( "SELECT id, event_id, event FROM $t ORDER BY id LIMIT %d", Askwpd_Webhooks::BATCH ), ARRAY_A ); // phpcs:ignore WordPress.DB.PreparedSQL.InterpolatedNotPrepared,WordPress.DB.DirectDatabaseQuery -- see the class comment.
				if ( ! $rows ) {
					break;
				}
				list( $res, $failed ) = self::send_rows( $rows, $background ? self::timeout_ms() : null );
				$results              = array_merge( $results, $res );
			}
			// Recorded before the lock is let go: a drainer that takes it next reads this
			// record, rather than the one before, and keeps its times.
			$s          = self::fresh_state();
			$s['depth'] = (int) $wpdb->get_var( "SELECT COUNT(*) FROM $t" ); // phpcs:ignore WordPress.DB.PreparedSQL.InterpolatedNotPrepared,WordPress.DB.DirectDatabaseQuery -- see the class comment.
			if ( $results ) {
				$s['tried_at'] = $started;
			}
			if ( null !== $failed ) {
				++$s['fails'];
				$s['next']  = time() + min( self::BACKOFF_MAX, 2 ** min( 10, $s['fails'] ) );
				$s['error'] = substr( '' !== (string) $failed['error'] ? (string) $failed['error'] : 'HTTP ' . (int) $failed['status'], 0, 300 );
			} else {
				$s['fails'] = 0;
				$s['next']  = 0;
				$s['error'] = '';
				if ( $results ) {
					// When the last backlog went out, and how long sending it took.
					$s['drained_at'] = $started;
					$s['drain_ms']   = round( ( microtime( true ) - $started ) * 1000, 1 );
				}
				if ( 0 === $s['depth'] && $s['overflow'] > 0 ) {
					// Events were lost at the bound: a full pass covers whatever they said.
					if ( in_array( Askwpd_Admin::reindex(), array( 'started', 'running' ), true ) ) {
						$s['overflow'] = 0;
					}
				}
			}
			self::save_state( $s );
		} finally {
			self::unlock();
		}
		if ( $results ) {
			Askwpd_Webhooks::record( end( $results ) );
		}
		if ( $s['depth'] > 0 || $s['overflow'] > 0 ) {
			self::schedule( (int) $s['next'] );
		}
		return $results;
	}

	/**
	 * Sends rows as one batch; on a replay or a refusal, one at a time, so that one
	 * delivered or malformed event cannot hold back the rest.
	 *
	 * @param array    $rows       id, event_id, event.
	 * @param int|null $timeout_ms How long to wait on each request (null: the webhook timeout).
	 * @return array array( results, the failed result or null ).
	 */
	private static function send_rows( array $rows, ?int $timeout_ms ): array {
		$events = array();
		$ids    = array();
		foreach ( $rows as $row ) {
			$ev = json_decode( (string) $row['event'], true );
			if ( ! is_array( $ev ) ) {
				self::delete( array( $row ) ); // Unreadable: nothing could ever send it.
				continue;
			}
			$events[] = $ev;
			$ids[]    = $row;
		}
		if ( ! $events ) {
			return array( array(), null );
		}
		$r = Askwpd_Webhooks::send( $events, $timeout_ms );
		if ( Askwpd_Webhooks::delivered( $r ) ) {
			self::delete( $ids );
			return array( array( $r ), null );
		}
		if ( ! self::refused( $r ) ) {
			return array( array( $r ), $r );
		}
		if ( 1 === count( $events ) ) {
			// Already stored (a replay), or refused for what it says: either way a resend
			// gets the same answer.
			self::delete( $ids );
			return array( array( $r ), null );
		}
		$results = array( $r );
		foreach ( $events as $k => $ev ) {
			$one       = Askwpd_Webhooks::send( array( $ev ), $timeout_ms );
			$results[] = $one;
			if ( Askwpd_Webhooks::delivered( $one ) || self::refused( $one ) ) {
				self::delete( array( $ids[ $k ] ) );
				continue;
			}
			return array( $results, $one );
		}
		return array( $results, null );
	}

	/**
	 * How long a drain in the background waits for the daemon to store a batch: longer
	 * than a request's own flush (750 ms), since a batch holds up to 100 events and nobody
	 * waits on it. A batch the daemon stores after a timeout is resent, and answered as a
	 * replay.
	 */
	private static function timeout_ms(): int {
		return (int) apply_filters( 'askwpd_outbox_timeout_ms', 3000 );
	}

	/** The daemon answered and will never take this batch as it is: a replayed ID, or an event it finds invalid. */
	private static function refused( array $r ): bool {
		if ( 400 === $r['status'] || 413 === $r['status'] ) {
			return true;
		}
		return 401 === $r['status'] && false !== strpos( $r['body'], 'replayed event id' );
	}

	/**
	 * Deletes sent rows, each only while it holds the event that was sent: a row replaced
	 * meanwhile holds a newer event, which stays.
	 *
	 * @param array $rows id, event_id.
	 */
	private static function delete( array $rows ): void {
		global $wpdb;
		$t = self::table();
		foreach ( $rows as $row ) {
			$wpdb->query( $wpdb->prepare( "DELETE FROM $t WHERE id = %d AND event_id = %s", $row['id'], $row['event_id'] ) ); // phpcs:ignore WordPress.DB.PreparedSQL.InterpolatedNotPrepared,WordPress.DB.DirectDatabaseQuery -- see the class comment.
		}
	}

	/**
	 * Notes a failed direct send, so that the next attempt waits its backoff.
	 *
	 * @param array $r The failed result.
	 */
	public static function failed( array $r ): void {
		$s = self::fresh_state();
		++$s['fails'];
		$s['next']  = time() + min( self::BACKOFF_MAX, 2 ** min( 10, $s['fails'] ) );
		$s['error'] = substr( '' !== (string) $r['error'] ? (string) $r['error'] : 'HTTP ' . (int) $r['status'], 0, 300 );
		self::save_state( $s );
		self::schedule( (int) $s['next'] );
	}

	/**
	 * What the admin page and Site Health say about the outbox: array(sentences, full),
	 * no sentences when it is empty.
	 */
	public static function report(): array {
		$s = self::state();
		if ( $s['depth'] <= 0 && $s['overflow'] <= 0 ) {
			return array( array(), false );
		}
		$out = array(
			sprintf(
				/* translators: 1: count of changes, 2: a time span such as "30 secs", or "now" */
				__( '%1$d content changes wait in the site\'s outbox for the daemon; the next attempt is %2$s.', 'askwpd-companion' ),
				(int) $s['depth'],
				(int) $s['next'] > time()
					/* translators: %s: a time span such as "30 secs" */
					? sprintf( __( 'in %s', 'askwpd-companion' ), human_time_diff( time(), (int) $s['next'] ) )
					: __( 'at the next page view', 'askwpd-companion' )
			),
		);
		if ( '' !== $s['error'] ) {
			/* translators: %s: an error message */
			$out[] = sprintf( __( 'The last attempt failed: %s.', 'askwpd-companion' ), $s['error'] );
		}
		if ( $s['overflow'] > 0 ) {
			$out[] = sprintf(
				/* translators: 1: the outbox's bound, 2: count of changes */
				__( 'The outbox is full (%1$d rows): %2$d more changes could not be kept. Once it has drained, the site asks the daemon for a full reindex, which covers them.', 'askwpd-companion' ),
				self::max_rows(),
				(int) $s['overflow']
			);
		}
		return array( $out, $s['overflow'] > 0 );
	}

	/** Empties the outbox and its state (tests, uninstall). */
	public static function clear(): void {
		global $wpdb;
		self::maybe_install();
		$wpdb->query( 'DELETE FROM ' . self::table() ); // phpcs:ignore WordPress.DB.PreparedSQL.NotPrepared,WordPress.DB.DirectDatabaseQuery -- see the class comment.
		delete_option( self::STATE_OPTION );
		wp_clear_scheduled_hook( self::CRON_HOOK );
	}
}
