<?php
/**
 * Tools → AskWP Index: the daemon's health and index status, "Reindex now", and the
 * connection settings.
 *
 * The page never waits long on the daemon: one short request, cached for a few
 * seconds, failures included, so a slow or dead daemon costs at most one timeout per
 * cache period.
 *
 * @package askwpd-companion
 */

if ( ! defined( 'ABSPATH' ) ) {
	exit;
}

final class Askwpd_Admin {

	const SLUG      = 'askwpd-index';
	const CACHE     = 'askwpd_companion_status';
	const CACHE_TTL = 10;

	public static function init(): void {
		add_action( 'admin_menu', array( __CLASS__, 'menu' ) );
		add_action( 'admin_post_askwpd_reindex', array( __CLASS__, 'handle_reindex' ) );
		add_action( 'admin_post_askwpd_save_settings', array( __CLASS__, 'handle_save' ) );
		add_filter( 'plugin_action_links_' . plugin_basename( ASKWPD_COMPANION_FILE ), array( __CLASS__, 'action_links' ) );
	}

	public static function activate(): void {
		delete_transient( self::CACHE );
	}

	public static function deactivate(): void {
		delete_transient( self::CACHE );
		delete_transient( Askwpd_Webhooks::BREAKER );
	}

	public static function menu(): void {
		add_management_page( 'AskWP Index', 'AskWP Index', 'manage_options', self::SLUG, array( __CLASS__, 'render' ) );
	}

	public static function page_url( array $args = array() ): string {
		return add_query_arg( array_merge( array( 'page' => self::SLUG ), $args ), admin_url( 'tools.php' ) );
	}

	public static function action_links( array $links ): array {
		array_unshift( $links, '<a href="' . esc_url( self::page_url() ) . '">' . esc_html__( 'Index status', 'askwpd-companion' ) . '</a>' );
		return $links;
	}

	/**
	 * The daemon's state: health (ok, unreachable, unauthorized, error), the message and
	 * fix for a problem, and /v1/status when it answered.
	 *
	 * @param bool $fresh Skip the cache.
	 */
	public static function daemon_state( bool $fresh = false ): array {
		if ( ! $fresh ) {
			$cached = get_transient( self::CACHE );
			if ( is_array( $cached ) ) {
				return $cached;
			}
		}
		$s  = Askwpd_Settings::get();
		$r  = Askwpd_Client::request(
			'GET',
			'/v1/status',
			null,
			array( 'Accept: application/json' ),
			array(
				'connect_ms' => 300,
				'timeout_ms' => (int) apply_filters( 'askwpd_status_timeout_ms', 1500 ),
			)
		);
		$st = array(
			'health'  => 'ok',
			'message' => '',
			'fix'     => '',
			'status'  => null,
			'ms'      => round( $r['ms'], 1 ),
			'at'      => time(),
		);
		$d  = Askwpd_Client::json( $r );
		if ( 0 === $r['status'] ) {
			$st['health']  = 'unreachable';
			$st['message'] = sprintf( 'The askwpd daemon does not answer at %s (%s).', $s['url'], $r['error'] );
			$st['fix']     = 28 === $r['errno']
				? 'The daemon is running but too slow to answer: check its load and log (journalctl -u askwpd).'
				: 'Start it with "systemctl start askwpd" (see "journalctl -u askwpd" if it stops again), or set ASKWPD_URL in wp-config.php if it listens elsewhere. The site keeps working meanwhile: chat falls back to AskWP, and the daemon\'s scheduled crawl catches up with missed changes.';
		} elseif ( 401 === $r['status'] || 403 === $r['status'] ) {
			$st['health']  = 'unauthorized';
			$st['message'] = 'The daemon answers, but refuses this site\'s token.';
			$st['fix']     = '' === $s['token']
				? sprintf( 'No token was found. Let the web server read %s/token (for example: chgrp www-data on it and chmod 0640), or set ASKWPD_TOKEN in wp-config.php.', $s['state_dir'] )
				: sprintf( 'The token (from: %s) is not the daemon\'s. Use the content of %s/token, or leave the field empty to read it from there.', $s['source']['token'], $s['state_dir'] );
		} elseif ( 200 !== $r['status'] || ! is_array( $d ) ) {
			$st['health']  = 'error';
			$st['message'] = sprintf( 'The daemon answered HTTP %d to /v1/status.', $r['status'] );
			$st['fix']     = 'See the daemon\'s log: journalctl -u askwpd.';
		} else {
			$st['status'] = $d;
		}
		set_transient( self::CACHE, $st, 'ok' === $st['health'] ? self::CACHE_TTL : 5 );
		return $st;
	}

	/**
	 * Reads a nested value by a dotted path, or null.
	 *
	 * @param mixed  $a    Array.
	 * @param string $path e.g. observability.retrieval.latency_p50_ms.
	 */
	public static function dig( $a, string $path ) {
		foreach ( explode( '.', $path ) as $k ) {
			if ( ! is_array( $a ) || ! array_key_exists( $k, $a ) ) {
				return null;
			}
			$a = $a[ $k ];
		}
		return $a;
	}

	/**
	 * The figures the page shows, each null when this daemon version does not report it.
	 *
	 * @param array $d /v1/status.
	 */
	public static function figures( array $d ): array {
		$queue = self::dig( $d, 'observability.queue' );
		$depth = null;
		if ( is_array( $queue ) ) {
			$depth = 0;
			foreach ( $queue as $state => $n ) {
				if ( in_array( $state, array( 'pending', 'error', 'retry', 'queued' ), true ) ) {
					$depth += (int) $n;
				}
			}
		}
		foreach ( array( 'queue_depth', 'extra.queue_depth', 'events.pending', 'observability.queue_depth' ) as $p ) {
			if ( null === $depth && is_numeric( self::dig( $d, $p ) ) ) {
				$depth = (int) self::dig( $d, $p );
			}
		}
		$lag = self::dig( $d, 'observability.freshness_lag_seconds' );
		return array(
			'documents' => self::dig( $d, 'index.documents' ),
			'chunks'    => self::dig( $d, 'index.chunks' ),
			'thin'      => self::dig( $d, 'index.thin' ),
			'by_type'   => self::dig( $d, 'index.by_type' ),
			'queue'     => $depth,
			'queue_by'  => $queue,
			'last'      => self::dig( $d, 'last_crawl' ),
			'errors'    => self::dig( $d, 'errors' ),
			'lag'       => is_numeric( $lag ) ? (int) $lag : null,
			'p50'       => self::dig( $d, 'observability.retrieval.latency_p50_ms' ),
			'p95'       => self::dig( $d, 'observability.retrieval.latency_p95_ms' ),
			'crawling'  => self::dig( $d, 'crawling' ),
			'database'  => self::dig( $d, 'database' ),
			'version'   => self::dig( $d, 'version' ),
		);
	}

	// --- actions -------------------------------------------------------------------------

	public static function handle_reindex(): void {
		if ( ! current_user_can( 'manage_options' ) ) {
			wp_die( esc_html__( 'You are not allowed to do this.', 'askwpd-companion' ), 403 );
		}
		check_admin_referer( 'askwpd_reindex' );
		$result = self::reindex();
		delete_transient( self::CACHE );
		wp_safe_redirect( self::page_url( array( 'askwpd_reindex' => $result ) ) );
		exit;
	}

	/**
	 * Asks the daemon for a full pass: POST /admin/reindex with the bearer token.
	 *
	 * @return string started, running, unsupported, unauthorized or failed.
	 */
	public static function reindex(): string {
		$r = Askwpd_Client::request( 'POST', '/admin/reindex', '', array(), array( 'timeout_ms' => 3000 ) );
		if ( $r['status'] >= 300 && $r['status'] < 400 ) {
			// The daemon redirects to its own page with ?reindex=started|running.
			return false !== strpos( $r['body'] . self::location( $r ), 'running' ) ? 'running' : 'started';
		}
		if ( 200 === $r['status'] || 202 === $r['status'] ) {
			return false !== strpos( $r['body'], 'running' ) ? 'running' : 'started';
		}
		if ( 501 === $r['status'] || 404 === $r['status'] ) {
			return 'unsupported';
		}
		if ( 401 === $r['status'] || 403 === $r['status'] ) {
			return 'unauthorized';
		}
		return 'failed';
	}

	private static function location( array $r ): string {
		return isset( $r['location'] ) ? (string) $r['location'] : '';
	}

	public static function handle_save(): void {
		if ( ! current_user_can( 'manage_options' ) ) {
			wp_die( esc_html__( 'You are not allowed to do this.', 'askwpd-companion' ), 403 );
		}
		check_admin_referer( 'askwpd_save_settings' );
		$in = isset( $_POST['askwpd'] ) && is_array( $_POST['askwpd'] ) ? wp_unslash( $_POST['askwpd'] ) : array(); // phpcs:ignore WordPress.Security.ValidatedSanitizedInput -- sanitized in save().
		Askwpd_Settings::save( $in );
		delete_transient( self::CACHE );
		wp_safe_redirect( self::page_url( array( 'askwpd_saved' => 1 ) ) );
		exit;
	}

	// --- page ------------------------------------------------------------------------------

	public static function render(): void {
		if ( ! current_user_can( 'manage_options' ) ) {
			return;
		}
		$st = self::daemon_state();
		$s  = Askwpd_Settings::get();
		echo '<div class="wrap askwpd-index"><h1>AskWP Index</h1>';

		$notice = isset( $_GET['askwpd_reindex'] ) ? sanitize_key( wp_unslash( $_GET['askwpd_reindex'] ) ) : ''; // phpcs:ignore WordPress.Security.NonceVerification
		$notes  = array(
			'started'      => array( 'success', 'A full reindex has started.' ),
			'running'      => array( 'info', 'An index pass is already running.' ),
			'unsupported'  => array( 'warning', 'This daemon version cannot reindex on request.' ),
			'unauthorized' => array( 'error', 'The daemon refused the token; see the fix below.' ),
			'failed'       => array( 'error', 'The daemon could not start a reindex; see its log.' ),
		);
		if ( isset( $notes[ $notice ] ) ) {
			printf( '<div class="notice notice-%s"><p>%s</p></div>', esc_attr( $notes[ $notice ][0] ), esc_html( $notes[ $notice ][1] ) );
		}
		if ( isset( $_GET['askwpd_saved'] ) ) { // phpcs:ignore WordPress.Security.NonceVerification
			echo '<div class="notice notice-success"><p>Settings saved.</p></div>';
		}

		if ( 'ok' === $st['health'] ) {
			printf(
				'<div class="notice notice-success inline askwpd-health" data-health="ok"><p><strong>Daemon healthy</strong> at <code>%s</code> (answered in %s ms, checked %s ago).</p></div>',
				esc_html( $s['url'] ),
				esc_html( (string) $st['ms'] ),
				esc_html( human_time_diff( (int) $st['at'] ) )
			);
			self::render_status( $st['status'] );
		} else {
			printf(
				'<div class="notice notice-error inline askwpd-health" data-health="%s"><p><strong>%s</strong></p><p>%s</p><p><strong>Fix:</strong> %s</p></div>',
				esc_attr( $st['health'] ),
				esc_html( 'unreachable' === $st['health'] ? 'The askwpd daemon is down.' : 'The askwpd daemon has a problem.' ),
				esc_html( $st['message'] ),
				esc_html( $st['fix'] )
			);
		}
		self::render_delivery();

		echo '<h2>Reindex</h2><form method="post" action="' . esc_url( admin_url( 'admin-post.php' ) ) . '">';
		wp_nonce_field( 'askwpd_reindex' );
		echo '<input type="hidden" name="action" value="askwpd_reindex">';
		submit_button( 'Reindex now', 'secondary', 'submit', false, 'ok' === $st['health'] ? array() : array( 'disabled' => 'disabled' ) );
		echo '<p class="description">Rediscovers and refetches every public page. The site is not slowed: the daemon crawls at its configured rate.</p></form>';

		self::render_settings( $s );
		echo '</div>';
	}

	private static function row( string $label, $value ): void {
		printf( '<tr><th scope="row">%s</th><td>%s</td></tr>', esc_html( $label ), esc_html( null === $value ? 'not reported by this daemon' : (string) $value ) );
	}

	private static function render_status( array $d ): void {
		$f = self::figures( $d );
		echo '<h2>Index</h2><table class="widefat striped askwpd-figures" style="max-width:900px"><tbody>';
		self::row( 'Documents indexed', $f['documents'] );
		self::row( 'Chunks', $f['chunks'] );
		self::row( 'Thin pages', $f['thin'] );
		if ( is_array( $f['by_type'] ) ) {
			$parts = array();
			foreach ( $f['by_type'] as $type => $n ) {
				$parts[] = $type . ': ' . (int) $n;
			}
			self::row( 'By type', implode( ', ', $parts ) );
		}
		$qby = '';
		if ( is_array( $f['queue_by'] ) ) {
			$parts = array();
			foreach ( $f['queue_by'] as $k => $n ) {
				$parts[] = $k . ': ' . (int) $n;
			}
			$qby = ' (' . implode( ', ', $parts ) . ')';
		}
		self::row( 'Queue depth', null === $f['queue'] ? null : $f['queue'] . $qby );
		self::row( 'Crawling now', null === $f['crawling'] ? null : ( $f['crawling'] ? 'yes' : 'no' ) );
		$last = $f['last'];
		if ( is_array( $last ) ) {
			$finished = isset( $last['finished_at'] ) && 0 !== strpos( (string) $last['finished_at'], '0001-' ) ? $last['finished_at'] : 'still running';
			self::row(
				'Last crawl',
				sprintf(
					'%s, started %s, finished %s: %d discovered, %d fetched, %d indexed, %d unchanged, %d removed, %d errors%s',
					$last['kind'] ?? '?',
					$last['started_at'] ?? '?',
					$finished,
					(int) ( $last['discovered'] ?? 0 ),
					(int) ( $last['fetched'] ?? 0 ),
					(int) ( $last['indexed'] ?? 0 ),
					(int) ( $last['unchanged'] ?? 0 ),
					(int) ( $last['removed'] ?? 0 ),
					(int) ( $last['errors'] ?? 0 ),
					empty( $last['error'] ) ? '' : ' (' . $last['error'] . ')'
				)
			);
		} else {
			self::row( 'Last crawl', 'none yet' );
		}
		self::row( 'Freshness lag', null === $f['lag'] ? null : human_time_diff( time() - $f['lag'], time() ) . ' (oldest fetch)' );
		self::row( 'Retrieval latency p50', is_numeric( $f['p50'] ) ? round( (float) $f['p50'], 1 ) . ' ms' : null );
		self::row( 'Retrieval latency p95', is_numeric( $f['p95'] ) ? round( (float) $f['p95'], 1 ) . ' ms' : null );
		self::row( 'WordPress database (from the daemon)', $f['database'] );
		self::row( 'Daemon version', $f['version'] );
		echo '</tbody></table>';

		$metrics = array();
		self::flatten( self::dig( $d, 'observability' ), 'observability', $metrics );
		self::flatten( self::dig( $d, 'extra' ), 'extra', $metrics );
		if ( $metrics ) {
			echo '<h2>Metrics</h2><table class="widefat striped askwpd-metrics" style="max-width:900px"><tbody>';
			foreach ( $metrics as $k => $v ) {
				self::row( $k, $v );
			}
			echo '</tbody></table>';
		}

		$errors = is_array( $f['errors'] ) ? array_slice( $f['errors'], 0, 20 ) : array();
		echo '<h2>Crawl errors</h2>';
		if ( ! $errors ) {
			echo '<p>None.</p>';
			return;
		}
		echo '<table class="widefat striped askwpd-errors" style="max-width:900px"><thead><tr><th>URL</th><th>Status</th><th>Error</th></tr></thead><tbody>';
		foreach ( $errors as $e ) {
			printf(
				'<tr><td><a href="%s">%s</a></td><td>%s</td><td>%s</td></tr>',
				esc_url( (string) ( $e['url'] ?? '' ) ),
				esc_html( (string) ( $e['url'] ?? '' ) ),
				esc_html( (string) ( $e['http_status'] ?? $e['status'] ?? '' ) ),
				esc_html( (string) ( $e['error'] ?? '' ) )
			);
		}
		echo '</tbody></table>';
	}

	/**
	 * Scalar metrics as "a.b.c" => value, skipping the long series (history, latency
	 * points) that the daemon's own /admin page charts.
	 *
	 * @param mixed  $v   Value.
	 * @param string $key Path so far.
	 * @param array  $out Result.
	 */
	private static function flatten( $v, string $key, array &$out ): void {
		if ( is_array( $v ) ) {
			if ( array_keys( $v ) === range( 0, count( $v ) - 1 ) && count( $v ) > 0 ) {
				return; // A series.
			}
			foreach ( $v as $k => $x ) {
				self::flatten( $x, $key . '.' . $k, $out );
			}
			return;
		}
		if ( is_bool( $v ) ) {
			$v = $v ? 'true' : 'false';
		} elseif ( is_float( $v ) ) {
			$v = round( $v, 3 );
		}
		if ( null !== $v && count( $out ) < 200 ) {
			$out[ $key ] = $v;
		}
	}

	private static function render_delivery(): void {
		$last = get_option( Askwpd_Webhooks::DELIVERY_OPTION );
		if ( ! is_array( $last ) ) {
			echo '<p class="askwpd-delivery">Webhooks: none sent yet.</p>';
			return;
		}
		if ( $last['ok'] ) {
			printf( '<p class="askwpd-delivery">Webhooks: delivered (HTTP %d), since %s ago.</p>', (int) $last['status'], esc_html( human_time_diff( (int) $last['at'] ) ) );
			return;
		}
		printf(
			'<div class="notice notice-warning inline askwpd-delivery"><p>Webhooks: the last delivery failed %s ago: %s. Changes reach the index at the daemon\'s next scheduled crawl instead.</p></div>',
			esc_html( human_time_diff( (int) $last['at'] ) ),
			esc_html( $last['error'] )
		);
	}

	private static function render_settings( array $s ): void {
		$opt = get_option( Askwpd_Settings::OPTION, array() );
		$opt = is_array( $opt ) ? $opt : array();
		$src = $s['source'];
		echo '<h2>Connection</h2>';
		echo '<p>Constants in wp-config.php (<code>ASKWPD_URL</code>, <code>ASKWPD_STATE_DIR</code>, <code>ASKWPD_TOKEN</code>, <code>ASKWPD_WEBHOOK_SECRET</code>) win over these fields; empty fields use the defaults, which read the daemon\'s own state files.</p>';
		echo '<form method="post" action="' . esc_url( admin_url( 'admin-post.php' ) ) . '">';
		wp_nonce_field( 'askwpd_save_settings' );
		echo '<input type="hidden" name="action" value="askwpd_save_settings"><table class="form-table" role="presentation"><tbody>';
		$text = static function ( $key, $label, $placeholder, $source, $value ) {
			printf(
				'<tr><th scope="row"><label for="askwpd-%1$s">%2$s</label></th><td><input type="text" class="regular-text code" id="askwpd-%1$s" name="askwpd[%1$s]" value="%3$s" placeholder="%4$s"%5$s><p class="description">In use: <code>%6$s</code> (from: %7$s)</p></td></tr>',
				esc_attr( $key ),
				esc_html( $label ),
				esc_attr( $value ),
				esc_attr( $placeholder ),
				'constant' === $source ? ' disabled' : '',
				esc_html( $value ? $value : $placeholder ),
				esc_html( $source )
			);
		};
		$text( 'url', 'Daemon URL', Askwpd_Settings::DEFAULT_URL, $src['url'], (string) ( $opt['url'] ?? '' ) );
		$text( 'state_dir', 'State directory', Askwpd_Settings::DEFAULT_STATE_DIR, $src['state_dir'], (string) ( $opt['state_dir'] ?? '' ) );
		foreach ( array(
			'token'  => 'Bearer token',
			'secret' => 'Webhook secret',
		) as $key => $label ) {
			printf(
				'<tr><th scope="row"><label for="askwpd-%1$s">%2$s</label></th><td><input type="password" autocomplete="new-password" class="regular-text code" id="askwpd-%1$s" name="askwpd[%1$s]" value=""%3$s> <label><input type="checkbox" name="askwpd[clear_%1$s]" value="1"> clear the saved value</label><p class="description">%4$s (from: %5$s). Leave empty to keep.</p></td></tr>',
				esc_attr( $key ),
				esc_html( $label ),
				'constant' === $src[ $key ] ? ' disabled' : '',
				esc_html( '' === $s[ $key ] ? 'Not found' : 'Set, ending in …' . substr( $s[ $key ], -4 ) ),
				esc_html( $src[ $key ] )
			);
		}
		echo '</tbody></table>';
		submit_button( 'Save connection settings' );
		echo '</form>';
	}
}
