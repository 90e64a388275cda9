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
		add_action( 'admin_init', array( __CLASS__, 'register_fields' ) );
		add_action( 'admin_notices', array( __CLASS__, 'notices' ) );
		add_action( 'update_option_' . Askwpd_Settings::OPTION, array( __CLASS__, 'forget_state' ), 10, 0 );
		add_action( 'add_option_' . Askwpd_Settings::OPTION, array( __CLASS__, 'forget_state' ), 10, 0 );
		add_filter( 'plugin_action_links_' . plugin_basename( ASKWPD_COMPANION_FILE ), array( __CLASS__, 'action_links' ) );
	}

	public static function activate(): void {
		delete_transient( self::CACHE );
		Askwpd_Outbox::install();
	}

	/** Drops the cached daemon state, after the connection settings change. */
	public static function forget_state(): void {
		Askwpd_Settings::reset();
		delete_transient( self::CACHE );
	}

	public static function deactivate(): void {
		delete_transient( self::CACHE );
		// The outbox keeps its rows for a reactivation; only the retries stop.
		wp_clear_scheduled_hook( Askwpd_Outbox::CRON_HOOK );
	}

	public static function menu(): void {
		add_management_page( __( 'AskWP Index', 'askwpd-companion' ), __( 'AskWP Index', 'askwpd-companion' ), 'manage_options', self::SLUG, array( __CLASS__, 'render' ) );
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
		$s   = Askwpd_Settings::get();
		$key = md5( $s['url'] . "\n" . $s['token'] );
		if ( ! $fresh ) {
			$cached = get_transient( self::CACHE );
			// A state cached for another daemon or token says nothing about this one.
			if ( is_array( $cached ) && ( $cached['key'] ?? '' ) === $key ) {
				return $cached;
			}
		}
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
			'key'     => $key,
		);
		$d  = Askwpd_Client::json( $r );
		if ( 0 === $r['status'] ) {
			$st['health']  = 'unreachable';
			/* translators: 1: the daemon's URL, 2: the connection error */
			$st['message'] = sprintf( __( 'The askwpd daemon does not answer at %1$s (%2$s).', 'askwpd-companion' ), $s['url'], $r['error'] );
			$st['fix']     = 28 === $r['errno']
				? __( 'The daemon is running but too slow to answer: check its load and log (journalctl -u askwpd).', 'askwpd-companion' )
				: __( 'Start it with "systemctl start askwpd" (see "journalctl -u askwpd" if it stops again), or set ASKWPD_URL in wp-config.php if it listens elsewhere. The site keeps working meanwhile: chat falls back to AskWP, and content changes wait in the outbox until it answers again.', 'askwpd-companion' );
		} elseif ( 401 === $r['status'] || 403 === $r['status'] ) {
			$st['health']  = 'unauthorized';
			$st['message'] = __( 'The daemon answers, but refuses this site\'s token.', 'askwpd-companion' );
			$st['fix']     = '' === $s['token']
				/* translators: 1: the state directory, 2: shell commands */
				? sprintf( __( 'No token was found. Let the web server read %1$s/token (run %2$s), or set ASKWPD_TOKEN in wp-config.php.', 'askwpd-companion' ), $s['state_dir'], Askwpd_Settings::permission_fix( $s['state_dir'] ) )
				/* translators: 1: where the token came from (constant, option, state_file), 2: the state directory */
				: sprintf( __( 'The token (from: %1$s) is not the daemon\'s. Use the content of %2$s/token, or leave the field empty to read it from there.', 'askwpd-companion' ), $s['source']['token'], $s['state_dir'] );
		} elseif ( 200 !== $r['status'] || ! is_array( $d ) ) {
			$st['health']  = 'error';
			/* translators: %d: an HTTP status code */
			$st['message'] = sprintf( __( 'The daemon answered HTTP %d to /v1/status.', 'askwpd-companion' ), $r['status'] );
			$st['fix']     = __( 'See the daemon\'s log: journalctl -u askwpd.', 'askwpd-companion' );
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
		echo '<div class="wrap askwpd-index"><h1>' . esc_html__( 'AskWP Index', 'askwpd-companion' ) . '</h1>';
		settings_errors();

		$notice = isset( $_GET['askwpd_reindex'] ) ? sanitize_key( wp_unslash( $_GET['askwpd_reindex'] ) ) : ''; // phpcs:ignore WordPress.Security.NonceVerification
		$notes  = array(
			'started'      => array( 'success', __( 'A full reindex has started.', 'askwpd-companion' ) ),
			'running'      => array( 'info', __( 'An index pass is already running.', 'askwpd-companion' ) ),
			'unsupported'  => array( 'warning', __( 'This daemon version cannot reindex on request.', 'askwpd-companion' ) ),
			'unauthorized' => array( 'error', __( 'The daemon refused the token; see the fix below.', 'askwpd-companion' ) ),
			'failed'       => array( 'error', __( 'The daemon could not start a reindex; see its log.', 'askwpd-companion' ) ),
		);
		if ( isset( $notes[ $notice ] ) ) {
			printf( '<div class="notice notice-%s"><p>%s</p></div>', esc_attr( $notes[ $notice ][0] ), esc_html( $notes[ $notice ][1] ) );
		}
		if ( isset( $_GET['askwpd_saved'] ) ) { // phpcs:ignore WordPress.Security.NonceVerification
			echo '<div class="notice notice-success"><p>' . esc_html__( 'Settings saved.', 'askwpd-companion' ) . '</p></div>';
		}

		if ( 'ok' === $st['health'] ) {
			printf(
				'<div class="notice notice-success inline askwpd-health" data-health="ok"><p>%s</p></div>',
				sprintf(
					/* translators: 1: "Daemon healthy", 2: the daemon's URL, 3: milliseconds, 4: a time span such as "5 secs" */
					esc_html__( '%1$s at %2$s (answered in %3$s ms, checked %4$s ago).', 'askwpd-companion' ),
					'<strong>' . esc_html__( 'Daemon healthy', 'askwpd-companion' ) . '</strong>',
					'<code>' . esc_html( $s['url'] ) . '</code>',
					esc_html( (string) $st['ms'] ),
					esc_html( human_time_diff( (int) $st['at'] ) )
				)
			);
			self::render_status( $st['status'] );
		} else {
			printf(
				'<div class="notice notice-error inline askwpd-health" data-health="%s"><p><strong>%s</strong></p><p>%s</p><p><strong>%s</strong> %s</p></div>',
				esc_attr( $st['health'] ),
				esc_html( 'unreachable' === $st['health'] ? __( 'The askwpd daemon is down.', 'askwpd-companion' ) : __( 'The askwpd daemon has a problem.', 'askwpd-companion' ) ),
				esc_html( $st['message'] ),
				esc_html__( 'Fix:', 'askwpd-companion' ),
				esc_html( $st['fix'] )
			);
		}
		foreach ( Askwpd_Settings::secret_problems( $s ) as $p ) {
			self::print_problem( $p['message'], $p['fix'], 'warning inline askwpd-secrets' );
		}
		self::render_delivery();
		self::render_outbox();

		echo '<h2>' . esc_html__( 'Reindex', 'askwpd-companion' ) . '</h2><form method="post" action="' . esc_url( admin_url( 'admin-post.php' ) ) . '">';
		wp_nonce_field( 'askwpd_reindex' );
		echo '<input type="hidden" name="action" value="askwpd_reindex">';
		submit_button( __( 'Reindex now', 'askwpd-companion' ), 'secondary', 'submit', false, 'ok' === $st['health'] ? array() : array( 'disabled' => 'disabled' ) );
		echo '<p class="description">' . esc_html__( 'Rediscovers and refetches every public page. The site is not slowed: the daemon crawls at its configured rate.', 'askwpd-companion' ) . '</p></form>';

		self::render_settings( $s );
		echo '</div>';
	}

	private static function row( string $label, $value ): void {
		printf( '<tr><th scope="row">%s</th><td>%s</td></tr>', esc_html( $label ), esc_html( null === $value ? __( 'not reported by this daemon', 'askwpd-companion' ) : (string) $value ) );
	}

	private static function render_status( array $d ): void {
		$f = self::figures( $d );
		echo '<h2>' . esc_html__( 'Index', 'askwpd-companion' ) . '</h2><table class="widefat striped askwpd-figures" style="max-width:900px"><tbody>';
		self::row( __( 'Documents indexed', 'askwpd-companion' ), $f['documents'] );
		self::row( __( 'Chunks', 'askwpd-companion' ), $f['chunks'] );
		self::row( __( 'Thin pages', 'askwpd-companion' ), $f['thin'] );
		if ( is_array( $f['by_type'] ) ) {
			$parts = array();
			foreach ( $f['by_type'] as $type => $n ) {
				$parts[] = $type . ': ' . (int) $n;
			}
			self::row( __( 'By type', 'askwpd-companion' ), implode( ', ', $parts ) );
		}
		$qby = '';
		if ( is_array( $f['queue_by'] ) ) {
			$parts = array();
			foreach ( $f['queue_by'] as $k => $n ) {
				$parts[] = $k . ': ' . (int) $n;
			}
			$qby = ' (' . implode( ', ', $parts ) . ')';
		}
		self::row( __( 'Queue depth', 'askwpd-companion' ), null === $f['queue'] ? null : $f['queue'] . $qby );
		self::row( __( 'Crawling now', 'askwpd-companion' ), null === $f['crawling'] ? null : ( $f['crawling'] ? __( 'yes', 'askwpd-companion' ) : __( 'no', 'askwpd-companion' ) ) );
		$last = $f['last'];
		if ( is_array( $last ) ) {
			$finished = isset( $last['finished_at'] ) && 0 !== strpos( (string) $last['finished_at'], '0001-' ) ? $last['finished_at'] : __( 'still running', 'askwpd-companion' );
			self::row(
				__( 'Last crawl', 'askwpd-companion' ),
				sprintf(
					/* translators: 1: kind of pass (full, incremental), 2: start time, 3: end time or "still running", 4-9: counts of pages, 10: an error message in parentheses, or nothing */
					__( '%1$s, started %2$s, finished %3$s: %4$d discovered, %5$d fetched, %6$d indexed, %7$d unchanged, %8$d removed, %9$d errors%10$s', 'askwpd-companion' ),
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
			self::row( __( 'Last crawl', 'askwpd-companion' ), __( 'none yet', 'askwpd-companion' ) );
		}
		/* translators: %s: a time span such as "2 hours" */
		$lag_text = __( '%s (oldest fetch)', 'askwpd-companion' );
		/* translators: %s: a number of milliseconds */
		$ms_text = __( '%s ms', 'askwpd-companion' );
		self::row( __( 'Freshness lag', 'askwpd-companion' ), null === $f['lag'] ? null : sprintf( $lag_text, human_time_diff( time() - $f['lag'], time() ) ) );
		self::row( __( 'Retrieval latency p50', 'askwpd-companion' ), is_numeric( $f['p50'] ) ? sprintf( $ms_text, round( (float) $f['p50'], 1 ) ) : null );
		self::row( __( 'Retrieval latency p95', 'askwpd-companion' ), is_numeric( $f['p95'] ) ? sprintf( $ms_text, round( (float) $f['p95'], 1 ) ) : null );
		self::row( __( 'WordPress database (from the daemon)', 'askwpd-companion' ), $f['database'] );
		self::row( __( 'Daemon version', 'askwpd-companion' ), $f['version'] );
		echo '</tbody></table>';

		$metrics = array();
		self::flatten( self::dig( $d, 'observability' ), 'observability', $metrics );
		self::flatten( self::dig( $d, 'extra' ), 'extra', $metrics );
		if ( $metrics ) {
			echo '<h2>' . esc_html__( 'Metrics', 'askwpd-companion' ) . '</h2><table class="widefat striped askwpd-metrics" style="max-width:900px"><tbody>';
			foreach ( $metrics as $k => $v ) {
				self::row( $k, $v );
			}
			echo '</tbody></table>';
		}

		$errors = is_array( $f['errors'] ) ? array_slice( $f['errors'], 0, 20 ) : array();
		echo '<h2>' . esc_html__( 'Crawl errors', 'askwpd-companion' ) . '</h2>';
		if ( ! $errors ) {
			echo '<p>' . esc_html__( 'None.', 'askwpd-companion' ) . '</p>';
			return;
		}
		printf(
			'<table class="widefat striped askwpd-errors" style="max-width:900px"><thead><tr><th>%s</th><th>%s</th><th>%s</th></tr></thead><tbody>',
			esc_html__( 'URL', 'askwpd-companion' ),
			esc_html__( 'Status', 'askwpd-companion' ),
			esc_html__( 'Error', 'askwpd-companion' )
		);
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
			echo '<p class="askwpd-delivery">' . esc_html__( 'Webhooks: none sent yet.', 'askwpd-companion' ) . '</p>';
			return;
		}
		if ( $last['ok'] ) {
			/* translators: 1: an HTTP status code, 2: a time span such as "5 mins" */
			printf( '<p class="askwpd-delivery">%s</p>', esc_html( sprintf( __( 'Webhooks: delivered (HTTP %1$d), since %2$s ago.', 'askwpd-companion' ), (int) $last['status'], human_time_diff( (int) $last['at'] ) ) ) );
			return;
		}
		printf(
			'<div class="notice notice-warning inline askwpd-delivery"><p>%s</p></div>',
			esc_html(
				sprintf(
					/* translators: 1: a time span such as "5 mins", 2: an error message */
					__( 'Webhooks: the last delivery failed %1$s ago: %2$s. The changes wait in the outbox and go out when the daemon answers again.', 'askwpd-companion' ),
					human_time_diff( (int) $last['at'] ),
					$last['error']
				)
			)
		);
	}

	/** The outbox's depth, when events wait in it. */
	public static function render_outbox(): void {
		list( $lines, $full ) = Askwpd_Outbox::report();
		if ( ! $lines ) {
			return;
		}
		printf(
			'<div class="notice notice-%s inline askwpd-outbox" data-depth="%d"><p>%s</p></div>',
			$full ? 'error' : 'warning',
			(int) Askwpd_Outbox::depth(),
			esc_html( implode( ' ', $lines ) )
		);
	}

	// --- settings (Settings API) ----------------------------------------------------------

	/** The connection section and its fields, on this page. */
	public static function register_fields(): void {
		global $wp_settings_fields;
		if ( isset( $wp_settings_fields[ self::SLUG ]['askwpd_connection'] ) ) {
			return;
		}
		Askwpd_Settings::register();
		add_settings_section( 'askwpd_connection', __( 'Connection', 'askwpd-companion' ), array( __CLASS__, 'section_intro' ), self::SLUG );
		$fields = array(
			'url'       => __( 'Daemon URL', 'askwpd-companion' ),
			'state_dir' => __( 'State directory', 'askwpd-companion' ),
			'token'     => __( 'Bearer token', 'askwpd-companion' ),
			'secret'    => __( 'Webhook secret', 'askwpd-companion' ),
		);
		foreach ( $fields as $key => $label ) {
			add_settings_field(
				'askwpd-' . $key,
				$label,
				array( __CLASS__, in_array( $key, array( 'token', 'secret' ), true ) ? 'secret_field' : 'text_field' ),
				self::SLUG,
				'askwpd_connection',
				array(
					'key'       => $key,
					'label_for' => 'askwpd-' . $key,
				)
			);
		}
	}

	public static function section_intro(): void {
		echo '<p>' . wp_kses(
			__( 'Constants in wp-config.php (<code>ASKWPD_URL</code>, <code>ASKWPD_STATE_DIR</code>, <code>ASKWPD_TOKEN</code>, <code>ASKWPD_WEBHOOK_SECRET</code>) win over these fields; empty fields use the defaults, which read the daemon\'s own state files.', 'askwpd-companion' ),
			array( 'code' => array() )
		) . '</p>';
		// Tells sanitize() that blank secret fields mean "keep".
		printf( '<input type="hidden" name="%s[form]" value="1">', esc_attr( Askwpd_Settings::OPTION ) );
	}

	/**
	 * A text field for url or state_dir, showing the value in use and its source.
	 *
	 * @param array $args key.
	 */
	public static function text_field( array $args ): void {
		$key         = $args['key'];
		$s           = Askwpd_Settings::get();
		$opt         = get_option( Askwpd_Settings::OPTION, array() );
		$value       = is_array( $opt ) ? (string) ( $opt[ $key ] ?? '' ) : '';
		$placeholder = 'url' === $key ? Askwpd_Settings::DEFAULT_URL : Askwpd_Settings::DEFAULT_STATE_DIR;
		$source      = $s['source'][ $key ];
		printf(
			'<input type="text" class="regular-text code" id="askwpd-%1$s" name="%2$s[%1$s]" value="%3$s" placeholder="%4$s"%5$s><p class="description">%6$s</p>',
			esc_attr( $key ),
			esc_attr( Askwpd_Settings::OPTION ),
			esc_attr( $value ),
			esc_attr( $placeholder ),
			'constant' === $source ? ' disabled' : '',
			sprintf(
				/* translators: 1: the value in use, 2: where it came from (constant, option, default) */
				esc_html__( 'In use: %1$s (from: %2$s)', 'askwpd-companion' ),
				'<code>' . esc_html( '' !== $value ? $value : $s[ $key ] ) . '</code>',
				esc_html( $source )
			)
		);
	}

	/**
	 * A write-only field for token or secret: the saved value is never printed back.
	 *
	 * @param array $args key.
	 */
	public static function secret_field( array $args ): void {
		$key    = $args['key'];
		$s      = Askwpd_Settings::get();
		$source = $s['source'][ $key ];
		printf(
			'<input type="password" autocomplete="new-password" class="regular-text code" id="askwpd-%1$s" name="%2$s[%1$s]" value=""%3$s> <label><input type="checkbox" name="%2$s[clear_%1$s]" value="1"> %4$s</label><p class="description">%5$s</p>',
			esc_attr( $key ),
			esc_attr( Askwpd_Settings::OPTION ),
			'constant' === $source ? ' disabled' : '',
			esc_html__( 'clear the saved value', 'askwpd-companion' ),
			esc_html(
				sprintf(
					/* translators: 1: "Not found" or "Set, ending in …abcd", 2: where it came from */
					__( '%1$s (from: %2$s). Leave empty to keep.', 'askwpd-companion' ),
					'' === $s[ $key ]
						? __( 'Not found', 'askwpd-companion' )
						/* translators: %s: the last four characters of a secret */
						: sprintf( __( 'Set, ending in …%s', 'askwpd-companion' ), substr( $s[ $key ], -4 ) ),
					$source
				)
			)
		);
	}

	private static function render_settings( array $s ): void {
		self::register_fields();
		echo '<form method="post" action="' . esc_url( admin_url( 'options.php' ) ) . '">';
		settings_fields( Askwpd_Settings::GROUP );
		do_settings_sections( self::SLUG );
		submit_button( __( 'Save connection settings', 'askwpd-companion' ) );
		echo '</form>';
		echo '<h2>' . esc_html__( 'Question log', 'askwpd-companion' ) . '</h2><p class="askwpd-privacy" style="max-width:900px">' . esc_html( Askwpd_Insights::privacy_text() ) . '</p>';
	}

	// --- notices ---------------------------------------------------------------------------

	/**
	 * Admin notices on the Dashboard and Plugins screens when the daemon is unreachable
	 * or its secrets are unreadable, each naming the fix. This page shows its own.
	 */
	public static function notices(): void {
		if ( ! current_user_can( 'manage_options' ) ) {
			return;
		}
		$screen = function_exists( 'get_current_screen' ) ? get_current_screen() : null;
		/**
		 * Filters the admin screens (by id) that show askwpd's problems as notices.
		 *
		 * @param string[] $screens Screen ids.
		 */
		$screens = (array) apply_filters( 'askwpd_notice_screens', array( 'dashboard', 'plugins' ) );
		if ( ! $screen || ! in_array( $screen->id, $screens, true ) ) {
			return;
		}
		$st = self::daemon_state();
		if ( 'ok' !== $st['health'] ) {
			self::print_problem( $st['message'], $st['fix'], 'error askwpd-notice-daemon', true );
		}
		foreach ( Askwpd_Settings::secret_problems() as $p ) {
			self::print_problem( $p['message'], $p['fix'], 'warning askwpd-notice-secrets', true );
		}
		list( $lines, $full ) = Askwpd_Outbox::report();
		if ( $full ) {
			self::print_problem( implode( ' ', $lines ), __( 'Get the daemon running again (see the AskWP Index page); nothing else is needed.', 'askwpd-companion' ), 'error askwpd-notice-outbox', true );
		}
	}

	/**
	 * One problem and its fix as a notice.
	 *
	 * @param string $message What is wrong.
	 * @param string $fix     What to do.
	 * @param string $class   notice-TYPE and extra classes.
	 * @param bool   $link    Link to the status page.
	 */
	private static function print_problem( string $message, string $fix, string $class, bool $link = false ): void {
		printf(
			'<div class="notice notice-%1$s"><p><strong>%2$s</strong> %3$s</p><p><strong>%4$s</strong> %5$s%6$s</p></div>',
			esc_attr( $class ),
			esc_html__( 'AskWP Index:', 'askwpd-companion' ),
			esc_html( $message ),
			esc_html__( 'Fix:', 'askwpd-companion' ),
			esc_html( $fix ),
			$link ? ' <a href="' . esc_url( self::page_url() ) . '">' . esc_html__( 'Index status', 'askwpd-companion' ) . '</a>' : ''
		);
	}
}
