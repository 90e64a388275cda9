<?php
/**
 * Cluster mode: several web heads, each with its own askwpd, share the site's database.
 * Define ASKWPD_CLUSTER in wp-config.php (true, or the cluster's name when the daemons set
 * [cluster] name) and each event is written to {prefix}askwpd_events in the request that
 * saved the post: that row is the durable record, read by whichever daemon leads, even
 * when every daemon is down. The local daemon is then pinged with the same events, a
 * short request whose failure costs nothing. The daemons create the table (cluster/schema.go
 * holds its SQL); until one has, events take the webhook path and its outbox.
 *
 * The insert goes straight to the database (a DirectDatabaseQuery exception for Plugin
 * Check): the events table is the daemons' queue, not data a cache could hold.
 *
 * @package askwpd-companion
 */

if ( ! defined( 'ABSPATH' ) ) {
	exit;
}

final class Askwpd_Cluster {

	/** How long the ping waits, in milliseconds: the row is what counts. */
	const PING_MS = 300;

	/**
	 * The cluster's name when cluster mode is on ('' for the usual one), else null.
	 */
	public static function name(): ?string {
		if ( ! defined( 'ASKWPD_CLUSTER' ) || false === ASKWPD_CLUSTER || null === ASKWPD_CLUSTER ) {
			return null;
		}
		$name = true === ASKWPD_CLUSTER ? '' : (string) ASKWPD_CLUSTER;
		if ( '1' === $name ) {
			$name = '';
		}
		if ( ! preg_match( '/^[A-Za-z0-9_]{0,24}$/', $name ) ) {
			return null;
		}
		return strtolower( $name );
	}

	/** The events table: the network's base prefix, as the daemon reads $table_prefix. */
	public static function table( string $name ): string {
		global $wpdb;
		return $wpdb->base_prefix . 'askwpd_' . ( '' === $name ? '' : $name . '_' ) . 'events';
	}

	/**
	 * Writes wire events to the cluster's table. False when cluster mode is off, on a
	 * network's other sites (cluster mode covers the main site only), or when the write
	 * failed (no table yet): the caller then sends them as webhooks.
	 *
	 * @param array $events Wire events, each with its 'id'.
	 */
	public static function write( array $events ): bool {
		global $wpdb;
		$name = self::name();
		if ( null === $name || ! $events || is_multisite() && ! is_main_site() ) {
			return false;
		}
		$rows = array();
		$args = array();
		foreach ( $events as $ev ) {
			$rows[] = '(%s, %s)';
			$args[] = (string) $ev['id'];
			$args[] = (string) wp_json_encode( $ev, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE );
		}
		// INSERT IGNORE on the unique event_id: the daemon writes a pinged event again.
		$sql      = 'INSERT IGNORE INTO `' . self::table( $name ) . '` (event_id, event) VALUES ' . implode( ', ', $rows );
		$suppress = $wpdb->suppress_errors( true );
		// phpcs:ignore WordPress.DB.PreparedSQL.NotPrepared -- the table name is checked in name(); the values are placeholders.
		$ok = false !== $wpdb->query( $wpdb->prepare( $sql, $args ) ); // phpcs:ignore WordPress.DB.DirectDatabaseQuery -- see the class comment.
		$wpdb->suppress_errors( $suppress );
		return $ok;
	}

	/**
	 * Tells the local daemon that events are in the table: the same events, signed, sent
	 * once with a short timeout and never queued.
	 *
	 * @param array $events Wire events.
	 * @return array One result per request.
	 */
	public static function ping( array $events ): array {
		$s = Askwpd_Settings::get();
		if ( '' === $s['secret'] ) {
			return array();
		}
		$results = array();
		foreach ( array_chunk( $events, Askwpd_Webhooks::BATCH ) as $batch ) {
			$results[] = Askwpd_Webhooks::send( $batch, self::PING_MS );
		}
		return $results;
	}
}
