<?php
/**
 * Site Health: async tests for the daemon, its secrets, the index's freshness, the last
 * index pass, the event backlog, the chat's AI provider and the daemon's store, and an
 * "AskWP Companion" section in Info.
 *
 * The tests are async so that the Status screen never waits on the daemon. Each has a
 * REST route, which the screen calls, and the same callback as async_direct_test, which
 * WordPress's weekly Site Health cron check runs in-process.
 *
 * @package askwpd-companion
 */

if ( ! defined( 'ABSPATH' ) ) {
	exit;
}

final class Askwpd_Health {

	const REST_NS = 'askwpd-companion/v1';

	/** Test ids, as they appear in the REST route and (prefixed) in Site Health. */
	const TESTS = array( 'daemon', 'secrets', 'freshness', 'last-pass', 'backlog', 'provider', 'store' );

	public static function init(): void {
		add_filter( 'site_status_tests', array( __CLASS__, 'tests' ) );
		add_filter( 'debug_information', array( __CLASS__, 'debug_information' ) );
		add_action( 'rest_api_init', array( __CLASS__, 'routes' ) );
	}

	/**
	 * Adds the async tests.
	 *
	 * @param array $tests Site Health tests, 'direct' and 'async'.
	 */
	public static function tests( $tests ) {
		if ( ! is_array( $tests ) ) {
			return $tests;
		}
		$labels = array(
			'daemon'    => __( 'The askwpd daemon answers', 'askwpd-companion' ),
			'secrets'   => __( 'The askwpd token and webhook secret are readable', 'askwpd-companion' ),
			'freshness' => __( 'The site index is fresh', 'askwpd-companion' ),
			'last-pass' => __( 'The last index pass had no errors', 'askwpd-companion' ),
			'backlog'   => __( 'Content changes reach the index', 'askwpd-companion' ),
			'provider'  => __( 'The chat has an AI provider', 'askwpd-companion' ),
			'store'     => __( 'The askwpd store is sound', 'askwpd-companion' ),
		);
		foreach ( self::TESTS as $id ) {
			$tests['async'][ self::test_name( $id ) ] = array(
				'label'             => $labels[ $id ],
				'test'              => rest_url( self::REST_NS . '/site-health/' . $id ),
				'has_rest'          => true,
				'async_direct_test' => array( __CLASS__, 'test_' . str_replace( '-', '_', $id ) ),
			);
		}
		return $tests;
	}

	public static function routes(): void {
		register_rest_route(
			self::REST_NS,
			'/site-health/(?P<test>' . implode( '|', self::TESTS ) . ')',
			array(
				'methods'             => 'GET',
				'callback'            => static function ( WP_REST_Request $req ) {
					return rest_ensure_response( self::run( (string) $req['test'] ) );
				},
				'permission_callback' => static function () {
					return current_user_can( 'view_site_health_checks' );
				},
			)
		);
	}

	/**
	 * Runs one test by id.
	 *
	 * @param string $id One of TESTS.
	 */
	public static function run( string $id ): array {
		$fn = array( __CLASS__, 'test_' . str_replace( '-', '_', $id ) );
		return in_array( $id, self::TESTS, true ) ? call_user_func( $fn ) : array();
	}

	private static function test_name( string $id ): string {
		return 'askwpd_' . str_replace( '-', '_', $id );
	}

	/**
	 * A Site Health result.
	 *
	 * @param string $id          Test id.
	 * @param string $status      good, recommended or critical.
	 * @param string $label       Headline.
	 * @param string $description HTML, already escaped.
	 */
	private static function result( string $id, string $status, string $label, string $description ): array {
		return array(
			'label'       => $label,
			'status'      => $status,
			'badge'       => array(
				'label' => __( 'AskWP Index', 'askwpd-companion' ),
				'color' => 'critical' === $status ? 'red' : ( 'good' === $status ? 'blue' : 'orange' ),
			),
			'description' => $description,
			'actions'     => current_user_can( 'manage_options' )
				? sprintf( '<p><a href="%s">%s</a></p>', esc_url( Askwpd_Admin::page_url() ), esc_html__( 'Open the AskWP Index page', 'askwpd-companion' ) )
				: '',
			'test'        => self::test_name( $id ),
		);
	}

	private static function para( string $text ): string {
		return '<p>' . esc_html( $text ) . '</p>';
	}

	private static function fix( string $text ): string {
		return '<p><strong>' . esc_html__( 'Fix:', 'askwpd-companion' ) . '</strong> ' . esc_html( $text ) . '</p>';
	}

	/**
	 * The daemon's /v1/status, or a ready "cannot tell" result when it did not answer.
	 *
	 * @param string $id    Test id.
	 * @param string $label The test's label when it passes.
	 * @return array array( status or null, result or null ).
	 */
	private static function status_or_result( string $id, string $label ): array {
		$st = Askwpd_Admin::daemon_state();
		if ( 'ok' === $st['health'] && is_array( $st['status'] ) ) {
			return array( $st['status'], null );
		}
		return array(
			null,
			self::result(
				$id,
				'recommended',
				$label,
				self::para( __( 'This cannot be checked until the askwpd daemon answers this site\'s status request; see the test "The askwpd daemon answers".', 'askwpd-companion' ) )
			),
		);
	}

	// --- the tests -------------------------------------------------------------------------

	public static function test_daemon(): array {
		$st = Askwpd_Admin::daemon_state();
		$s  = Askwpd_Settings::get();
		if ( 'ok' === $st['health'] ) {
			return self::result(
				'daemon',
				'good',
				__( 'The askwpd daemon answers', 'askwpd-companion' ),
				/* translators: 1: the daemon's URL, 2: milliseconds */
				self::para( sprintf( __( 'The daemon at %1$s answered its status request in %2$s ms.', 'askwpd-companion' ), $s['url'], $st['ms'] ) )
			);
		}
		$label = 'unreachable' === $st['health']
			? __( 'The askwpd daemon does not answer', 'askwpd-companion' )
			: __( 'The askwpd daemon has a problem', 'askwpd-companion' );
		return self::result(
			'daemon',
			'critical',
			$label,
			self::para( $st['message'] ) . self::para( __( 'Chat answers from the site index and instant index updates need it.', 'askwpd-companion' ) ) . self::fix( $st['fix'] )
		);
	}

	public static function test_secrets(): array {
		$s        = Askwpd_Settings::get();
		$problems = Askwpd_Settings::secret_problems( $s );
		if ( ! $problems ) {
			return self::result(
				'secrets',
				'good',
				__( 'The askwpd token and webhook secret are readable', 'askwpd-companion' ),
				self::para(
					sprintf(
						/* translators: 1: where the token came from, 2: where the secret came from (constant, option, state_file) */
						__( 'The bearer token (from: %1$s) and the webhook secret (from: %2$s) are set.', 'askwpd-companion' ),
						$s['source']['token'],
						$s['source']['secret']
					)
				)
			);
		}
		$critical = false;
		$html     = '';
		foreach ( $problems as $p ) {
			$critical = $critical || in_array( $p['problem'], array( 'unreadable', 'unreadable_dir' ), true );
			$html    .= self::para( $p['message'] ) . self::fix( $p['fix'] );
		}
		return self::result(
			'secrets',
			$critical ? 'critical' : 'recommended',
			__( 'The askwpd token or webhook secret cannot be read', 'askwpd-companion' ),
			$html . self::para( __( 'Without them the site cannot call the daemon or sign its change notifications.', 'askwpd-companion' ) )
		);
	}

	/**
	 * The latest sign that the daemon looked at the site: the end of its last finished
	 * pass, or the last change notification it applied. 0 when there is none.
	 *
	 * @param array $d /v1/status.
	 */
	public static function last_refresh( array $d ): int {
		$t = 0;
		$runs = array();
		if ( is_array( $d['last_crawl'] ?? null ) ) {
			$runs[] = $d['last_crawl'];
		}
		if ( is_array( $d['runs'] ?? null ) ) {
			$runs = array_merge( $runs, $d['runs'] );
		}
		foreach ( $runs as $run ) {
			$t = max( $t, self::time( $run['finished_at'] ?? '' ) );
		}
		return max( $t, self::time( Askwpd_Admin::dig( $d, 'freshness.last_event_applied' ) ) );
	}

	/**
	 * An RFC 3339 time as a Unix time; 0 for none, Go's zero time or garbage.
	 *
	 * @param mixed $v Time.
	 */
	private static function time( $v ): int {
		if ( ! is_string( $v ) || '' === $v || 0 === strpos( $v, '0001-' ) ) {
			return 0;
		}
		$t = strtotime( $v );
		return false === $t ? 0 : $t;
	}

	public static function test_freshness(): array {
		$label = __( 'The site index is fresh', 'askwpd-companion' );
		list( $d, $r ) = self::status_or_result( 'freshness', $label );
		if ( null === $d ) {
			return $r;
		}
		/**
		 * Filters how old (in seconds) the index's last refresh may be before Site Health
		 * recommends a look.
		 *
		 * @param int $max Default: one day.
		 */
		$max  = (int) apply_filters( 'askwpd_health_max_age', DAY_IN_SECONDS );
		$last = self::last_refresh( $d );
		$lag  = Askwpd_Admin::dig( $d, 'observability.freshness_lag_seconds' );
		$more = is_numeric( $lag ) && $lag > 0
			/* translators: %s: a time span such as "3 days" */
			? self::para( sprintf( __( 'The least recently fetched page was fetched %s ago.', 'askwpd-companion' ), human_time_diff( time() - (int) $lag ) ) )
			: '';
		if ( 0 === $last ) {
			return self::result(
				'freshness',
				Askwpd_Admin::dig( $d, 'crawling' ) ? 'good' : 'recommended',
				Askwpd_Admin::dig( $d, 'crawling' ) ? __( 'The first index pass is running', 'askwpd-companion' ) : __( 'No index pass has finished yet', 'askwpd-companion' ),
				self::para( __( 'The chat can only cite pages the daemon has indexed.', 'askwpd-companion' ) )
				. ( Askwpd_Admin::dig( $d, 'crawling' ) ? '' : self::fix( __( 'Start one with "Reindex now" on the AskWP Index page, or run "askwpd index" on the server.', 'askwpd-companion' ) ) )
			);
		}
		/* translators: %s: a time span such as "3 hours" */
		$when = sprintf( __( 'The index was last refreshed %s ago.', 'askwpd-companion' ), human_time_diff( $last ) );
		if ( time() - $last <= $max ) {
			return self::result( 'freshness', 'good', $label, self::para( $when ) . $more );
		}
		return self::result(
			'freshness',
			'recommended',
			__( 'The site index is stale', 'askwpd-companion' ),
			self::para( $when ) . $more
			. self::para( __( 'The daemon refreshes it on a schedule and on every change notification, so neither has happened for a while.', 'askwpd-companion' ) )
			. self::fix( __( 'Check that the schedule is not disabled in askwpd\'s configuration, and read its log (journalctl -u askwpd); "Reindex now" on the AskWP Index page starts a pass.', 'askwpd-companion' ) )
		);
	}

	public static function test_last_pass(): array {
		$label = __( 'The last index pass had no errors', 'askwpd-companion' );
		list( $d, $r ) = self::status_or_result( 'last-pass', $label );
		if ( null === $d ) {
			return $r;
		}
		$run = null;
		foreach ( array_merge( is_array( $d['last_crawl'] ?? null ) ? array( $d['last_crawl'] ) : array(), is_array( $d['runs'] ?? null ) ? $d['runs'] : array() ) as $candidate ) {
			if ( is_array( $candidate ) && self::time( $candidate['finished_at'] ?? '' ) > 0 ) {
				$run = $candidate;
				break;
			}
		}
		if ( null === $run ) {
			return self::result( 'last-pass', 'good', __( 'No index pass has finished yet', 'askwpd-companion' ), self::para( __( 'There is nothing to check yet.', 'askwpd-companion' ) ) );
		}
		$errors = (int) ( $run['errors'] ?? 0 );
		$failed = isset( $run['error'] ) && '' !== (string) $run['error'];
		$counts = sprintf(
			/* translators: 1: kind of pass (full, incremental), 2: a time span, 3-5: counts of pages, 6: count of errors */
			__( 'The last %1$s pass finished %2$s ago: %3$d fetched, %4$d indexed, %5$d removed, %6$d errors.', 'askwpd-companion' ),
			(string) ( $run['kind'] ?? '' ),
			human_time_diff( self::time( $run['finished_at'] ) ),
			(int) ( $run['fetched'] ?? 0 ),
			(int) ( $run['indexed'] ?? 0 ),
			(int) ( $run['removed'] ?? 0 ),
			$errors
		);
		if ( 0 === $errors && ! $failed ) {
			return self::result( 'last-pass', 'good', $label, self::para( $counts ) );
		}
		$html = self::para( $counts );
		if ( $failed ) {
			/* translators: %s: an error message */
			$html .= self::para( sprintf( __( 'The pass stopped with: %s', 'askwpd-companion' ), (string) $run['error'] ) );
		}
		$list = is_array( $d['errors'] ?? null ) ? array_slice( $d['errors'], 0, 5 ) : array();
		if ( $list ) {
			$html .= '<ul>';
			foreach ( $list as $e ) {
				$html .= '<li><code>' . esc_html( (string) ( $e['url'] ?? '' ) ) . '</code>: ' . esc_html( trim( ( $e['http_status'] ?? '' ) . ' ' . ( $e['error'] ?? '' ) ) ) . '</li>';
			}
			$html .= '</ul>';
		}
		return self::result(
			'last-pass',
			'recommended',
			__( 'The last index pass had errors', 'askwpd-companion' ),
			$html . self::fix( __( 'Pages that fail to fetch are not in the chat\'s answers. The AskWP Index page lists them; fix or unpublish them, and the next pass retries.', 'askwpd-companion' ) )
		);
	}

	/**
	 * The daemon's store: sound, being healed, or healed lately (its damaged file kept).
	 */
	public static function test_store(): array {
		$label = __( 'The askwpd store is sound', 'askwpd-companion' );
		list( $d, $r ) = self::status_or_result( 'store', $label );
		if ( null === $d ) {
			return $r;
		}
		$st = is_array( $d['store'] ?? null ) ? $d['store'] : array();
		if ( isset( $st['healthy'] ) && ! $st['healthy'] ) {
			return self::result(
				'store',
				'critical',
				__( 'The askwpd store is damaged', 'askwpd-companion' ),
				/* translators: %s: what the daemon found wrong */
				self::para( sprintf( __( 'The daemon found its store damaged: %s', 'askwpd-companion' ), (string) ( $st['problem'] ?? '' ) ) )
				. self::para( __( 'It heals it by itself: it moves the file aside, starts a fresh store and re-indexes the site, answering from what it has meanwhile.', 'askwpd-companion' ) )
			);
		}
		$h = is_array( $st['last_heal'] ?? null ) ? $st['last_heal'] : null;
		$at = null === $h ? 0 : self::time( $h['at'] ?? '' );
		if ( 0 === $at || time() - $at > 7 * DAY_IN_SECONDS ) {
			return self::result( 'store', 'good', $label, self::para( __( 'The daemon\'s store reads back as sound.', 'askwpd-companion' ) ) );
		}
		$html = self::para(
			sprintf(
				/* translators: 1: a time span, 2: what was wrong (corrupt, deleted, ...) */
				__( '%1$s ago the daemon found its store %2$s and healed it; the site was indexed again.', 'askwpd-companion' ),
				human_time_diff( $at ),
				(string) ( $h['cause'] ?? '' )
			)
		);
		$salvaged = is_array( $h['salvaged'] ?? null ) ? $h['salvaged'] : array();
		$html    .= self::para(
			sprintf(
				/* translators: %d: a count of questions */
				__( 'Questions kept from the visitors\' question log: %d.', 'askwpd-companion' ),
				(int) ( $salvaged['questions'] ?? 0 )
			)
		);
		$fix = __( 'Nothing is needed: the store heals by itself. If it happens again, check the disk (dmesg, smartctl).', 'askwpd-companion' );
		if ( '' !== (string) ( $h['damaged_file'] ?? '' ) ) {
			/* translators: %s: a file path */
			$fix = sprintf( __( 'The damaged file is kept at %s; askwpd never deletes it. Remove it once you no longer need it, and if this happens again, check the disk (dmesg, smartctl).', 'askwpd-companion' ), (string) $h['damaged_file'] );
		}
		return self::result( 'store', 'recommended', __( 'The askwpd store was damaged and healed', 'askwpd-companion' ), $html . self::fix( $fix ) );
	}

	public static function test_backlog(): array {
		$label = __( 'Content changes reach the index', 'askwpd-companion' );
		list( $lines, $full ) = Askwpd_Outbox::report();
		$outbox               = implode( '', array_map( array( __CLASS__, 'para' ), $lines ) );
		list( $d, $r )        = self::status_or_result( 'backlog', $label );
		if ( null === $d ) {
			if ( '' === $outbox ) {
				return $r;
			}
			return self::result(
				'backlog',
				$full ? 'critical' : 'recommended',
				__( 'Content changes wait for the daemon', 'askwpd-companion' ),
				$outbox . $r['description']
			);
		}
		/**
		 * Filters how long (in seconds) a change notification may wait in the daemon's
		 * queue before Site Health recommends a look.
		 *
		 * @param int $max Default: 15 minutes.
		 */
		$max      = (int) apply_filters( 'askwpd_health_max_event_wait', 15 * MINUTE_IN_SECONDS );
		$pending  = Askwpd_Admin::dig( $d, 'freshness.pending_events' );
		$failed   = (int) Askwpd_Admin::dig( $d, 'freshness.failed_events' );
		$oldest   = self::time( Askwpd_Admin::dig( $d, 'freshness.oldest_pending_event' ) );
		$delivery = get_option( Askwpd_Webhooks::DELIVERY_OPTION );
		$html     = $outbox;
		$problem  = '' !== $outbox;
		if ( null === $pending ) {
			$html .= self::para( __( 'This daemon version does not report its event queue.', 'askwpd-companion' ) );
		} else {
			/* translators: 1: count of waiting notifications, 2: count of failed ones */
			$html .= self::para( sprintf( __( 'Change notifications waiting in the daemon: %1$d; failed: %2$d.', 'askwpd-companion' ), (int) $pending, $failed ) );
			if ( (int) $pending > 0 && $oldest > 0 && time() - $oldest > $max ) {
				$problem = true;
				/* translators: %s: a time span such as "2 hours" */
				$html .= self::para( sprintf( __( 'The oldest has waited %s.', 'askwpd-companion' ), human_time_diff( $oldest ) ) );
			}
			$problem = $problem || $failed > 0;
		}
		if ( is_array( $delivery ) && empty( $delivery['ok'] ) ) {
			$problem = true;
			/* translators: 1: a time span such as "5 mins", 2: an error message */
			$html .= self::para( sprintf( __( 'The site\'s last change notification failed %1$s ago: %2$s.', 'askwpd-companion' ), human_time_diff( (int) ( $delivery['at'] ?? time() ) ), (string) ( $delivery['error'] ?? '' ) ) );
		}
		if ( ! $problem ) {
			return self::result( 'backlog', 'good', $label, $html );
		}
		return self::result(
			'backlog',
			'recommended',
			__( 'Content changes are slow to reach the index', 'askwpd-companion' ),
			$html . self::fix( __( 'Edits reach the chat at the daemon\'s next scheduled pass instead. Read the daemon\'s log (journalctl -u askwpd) for why events wait or fail.', 'askwpd-companion' ) )
		);
	}

	/**
	 * The daemon's provider object from /v1/status, or null when this daemon does not
	 * report one. Only the fields Site Health shows, each a string (configured a bool), and
	 * the key masked here too, in case a daemon sent more of it than it should.
	 *
	 * @param array $d /v1/status.
	 */
	public static function provider( array $d ): ?array {
		$p = $d['provider'] ?? null;
		if ( ! is_array( $p ) || ! array_key_exists( 'configured', $p ) ) {
			return null;
		}
		$out = array( 'configured' => true === $p['configured'] );
		foreach ( array( 'kind', 'label', 'model', 'base_url', 'source', 'key_from', 'key', 'hint' ) as $k ) {
			$out[ $k ] = isset( $p[ $k ] ) && is_scalar( $p[ $k ] ) ? trim( (string) $p[ $k ] ) : '';
		}
		$out['key'] = self::mask_key( $out['key'] );
		return $out;
	}

	/**
	 * A key as it may be shown: kept when already masked (it holds … or *), else cut to its
	 * first three and last four characters, or to nothing when it is too short for that.
	 *
	 * @param string $key A masked or (by mistake) plain key.
	 */
	public static function mask_key( string $key ): string {
		if ( '' === $key || false !== strpos( $key, '…' ) || false !== strpos( $key, '*' ) ) {
			return $key;
		}
		return strlen( $key ) >= 16 ? substr( $key, 0, 3 ) . '…' . substr( $key, -4 ) : '…';
	}

	/** Where the site owner sets a provider key, as HTML: the Connectors screen from WordPress 7.0. */
	private static function provider_fix(): string {
		if ( function_exists( 'wp_get_connectors' ) ) {
			return '<p><strong>' . esc_html__( 'Fix:', 'askwpd-companion' ) . '</strong> ' . sprintf(
				/* translators: %s: a link to Settings → Connectors */
				esc_html__( 'Add an AI provider key under %s (OpenAI, Anthropic or Google), in AskWP\'s settings, or in askwpd\'s configuration ([provider] in /etc/askwpd/askwpd.toml).', 'askwpd-companion' ),
				'<a href="' . esc_url( admin_url( 'options-connectors.php' ) ) . '">' . esc_html__( 'Settings → Connectors', 'askwpd-companion' ) . '</a>'
			) . '</p>';
		}
		return self::fix( __( 'Choose a provider and add its key in AskWP\'s settings, or in askwpd\'s configuration ([provider] in /etc/askwpd/askwpd.toml).', 'askwpd-companion' ) );
	}

	public static function test_provider(): array {
		$label = __( 'The chat has an AI provider', 'askwpd-companion' );
		list( $d, $r ) = self::status_or_result( 'provider', $label );
		if ( null === $d ) {
			return $r;
		}
		$p = self::provider( $d );
		if ( null === $p ) {
			return self::result( 'provider', 'good', $label, self::para( __( 'This daemon version does not report its AI provider; the chat says so when it has none.', 'askwpd-companion' ) ) );
		}
		if ( ! $p['configured'] ) {
			$html = self::para( __( 'No AI provider key is configured, so the chat cannot answer: visitors are told the assistant is not set up yet. Search, the abilities and the index work without one.', 'askwpd-companion' ) );
			if ( '' !== $p['hint'] ) {
				/* translators: %s: the daemon's hint, e.g. where it looked for a key */
				$html .= self::para( sprintf( __( 'The daemon says: %s', 'askwpd-companion' ), $p['hint'] ) );
			}
			return self::result( 'provider', 'recommended', __( 'No AI provider key is configured for the chat', 'askwpd-companion' ), $html . self::provider_fix() );
		}
		return self::result( 'provider', 'good', $label, self::para( self::provider_summary( $p ) ) );
	}

	/**
	 * One line on the provider in use: name, model, and where its key comes from (masked).
	 *
	 * @param array $p provider().
	 */
	private static function provider_summary( array $p ): string {
		$name = '' !== $p['label'] ? $p['label'] : $p['kind'];
		if ( '' !== $p['kind'] && $p['kind'] !== $name ) {
			$name .= ' (' . $p['kind'] . ')';
		}
		return sprintf(
			/* translators: 1: provider, e.g. "OpenAI (openai)", 2: model, 3: the masked key, 4: where the key comes from */
			__( 'The chat uses %1$s, model %2$s, with the key %3$s from %4$s.', 'askwpd-companion' ),
			'' === $name ? __( 'an unnamed provider', 'askwpd-companion' ) : $name,
			'' === $p['model'] ? __( 'the default', 'askwpd-companion' ) : $p['model'],
			'' === $p['key'] ? __( '(none needed)', 'askwpd-companion' ) : $p['key'],
			'' !== $p['key_from'] ? $p['key_from'] : ( '' !== $p['source'] ? $p['source'] : __( 'the daemon\'s configuration', 'askwpd-companion' ) )
		);
	}

	// --- Info ------------------------------------------------------------------------------

	/**
	 * The "AskWP Companion" section of Site Health → Info. Secrets are never shown, only
	 * where they come from.
	 *
	 * @param array $info Sections.
	 */
	public static function debug_information( $info ) {
		if ( ! is_array( $info ) ) {
			return $info;
		}
		$s      = Askwpd_Settings::get();
		$st     = Askwpd_Admin::daemon_state();
		$d      = is_array( $st['status'] ) ? $st['status'] : array();
		$f      = $d ? Askwpd_Admin::figures( $d ) : array();
		$none   = __( 'not reported', 'askwpd-companion' );
		$secret = static function ( string $key ) use ( $s ) {
			/* translators: %s: where the value came from (constant, option, state_file) */
			return '' === $s[ $key ] ? __( 'not found', 'askwpd-companion' ) : sprintf( __( 'set (from: %s)', 'askwpd-companion' ), $s['source'][ $key ] );
		};
		$fields = array(
			'version'   => array(
				'label' => __( 'Plugin version', 'askwpd-companion' ),
				'value' => ASKWPD_COMPANION_VERSION,
			),
			'url'       => array(
				'label' => __( 'Daemon URL', 'askwpd-companion' ),
				'value' => $s['url'] . ' (' . $s['source']['url'] . ')',
			),
			'state_dir' => array(
				'label' => __( 'State directory', 'askwpd-companion' ),
				'value' => $s['state_dir'] . ' (' . $s['source']['state_dir'] . ')',
			),
			'token'     => array(
				'label' => __( 'Bearer token', 'askwpd-companion' ),
				'value' => $secret( 'token' ),
				'debug' => '' === $s['token'] ? 'none' : $s['source']['token'],
			),
			'secret'    => array(
				'label' => __( 'Webhook secret', 'askwpd-companion' ),
				'value' => $secret( 'secret' ),
				'debug' => '' === $s['secret'] ? 'none' : $s['source']['secret'],
			),
			'daemon'    => array(
				'label' => __( 'Daemon', 'askwpd-companion' ),
				/* translators: 1: ok, unreachable, unauthorized or error, 2: milliseconds */
				'value' => sprintf( __( '%1$s (%2$s ms)', 'askwpd-companion' ), $st['health'], $st['ms'] ),
				'debug' => $st['health'],
			),
		);
		if ( $d ) {
			$last   = self::last_refresh( $d );
			$fields += array(
				'daemon_version' => array(
					'label' => __( 'Daemon version', 'askwpd-companion' ),
					'value' => null === $f['version'] ? $none : (string) $f['version'],
				),
				'documents'      => array(
					'label' => __( 'Documents indexed', 'askwpd-companion' ),
					'value' => null === $f['documents'] ? $none : (string) (int) $f['documents'],
				),
				'chunks'         => array(
					'label' => __( 'Chunks', 'askwpd-companion' ),
					'value' => null === $f['chunks'] ? $none : (string) (int) $f['chunks'],
				),
				'last_refresh'   => array(
					'label' => __( 'Last refresh', 'askwpd-companion' ),
					'value' => 0 === $last ? __( 'never', 'askwpd-companion' ) : gmdate( 'c', $last ),
				),
				'pending'        => array(
					'label' => __( 'Change notifications waiting', 'askwpd-companion' ),
					'value' => null === Askwpd_Admin::dig( $d, 'freshness.pending_events' ) ? $none : (string) (int) Askwpd_Admin::dig( $d, 'freshness.pending_events' ),
				),
				'failed'         => array(
					'label' => __( 'Change notifications failed', 'askwpd-companion' ),
					'value' => null === Askwpd_Admin::dig( $d, 'freshness.failed_events' ) ? $none : (string) (int) Askwpd_Admin::dig( $d, 'freshness.failed_events' ),
				),
				'database'       => array(
					'label' => __( 'WordPress database (from the daemon)', 'askwpd-companion' ),
					'value' => null === $f['database'] ? $none : (string) $f['database'],
				),
			);
			$p      = self::provider( $d );
			$fields += array(
				'provider'     => array(
					'label' => __( 'Chat AI provider', 'askwpd-companion' ),
					'value' => null === $p ? $none : ( $p['configured'] ? trim( $p['label'] . ' (' . $p['kind'] . ')' ) : __( 'none configured', 'askwpd-companion' ) ),
					'debug' => null === $p ? 'not reported' : ( $p['configured'] ? $p['kind'] : 'none' ),
				),
			);
			if ( null !== $p && $p['configured'] ) {
				$fields += array(
					'provider_model'  => array(
						'label' => __( 'Chat model', 'askwpd-companion' ),
						'value' => '' === $p['model'] ? $none : $p['model'],
					),
					'provider_url'    => array(
						'label' => __( 'Provider address', 'askwpd-companion' ),
						'value' => '' === $p['base_url'] ? __( 'the provider\'s default', 'askwpd-companion' ) : $p['base_url'],
					),
					'provider_key'    => array(
						'label' => __( 'Provider key (masked)', 'askwpd-companion' ),
						'value' => '' === $p['key'] ? __( 'none', 'askwpd-companion' ) : $p['key'],
						'debug' => '' === $p['key'] ? 'none' : 'set',
					),
					'provider_source' => array(
						'label' => __( 'Provider key from', 'askwpd-companion' ),
						'value' => trim( $p['key_from'] . ( '' !== $p['source'] ? ' (' . $p['source'] . ')' : '' ) ),
					),
				);
			} elseif ( null !== $p && '' !== $p['hint'] ) {
				$fields['provider_hint'] = array(
					'label' => __( 'Where to set a provider key', 'askwpd-companion' ),
					'value' => $p['hint'],
				);
			}
		}
		$fields['outbox']  = array(
			'label' => __( 'Changes waiting in the outbox', 'askwpd-companion' ),
			'value' => (string) Askwpd_Outbox::depth(),
		);
		$delivery          = get_option( Askwpd_Webhooks::DELIVERY_OPTION );
		$fields['webhook'] = array(
			'label' => __( 'Last change notification', 'askwpd-companion' ),
			'value' => is_array( $delivery )
				/* translators: 1: "delivered" or "failed", 2: a date */
				? sprintf( __( '%1$s at %2$s', 'askwpd-companion' ), empty( $delivery['ok'] ) ? __( 'failed', 'askwpd-companion' ) : __( 'delivered', 'askwpd-companion' ), gmdate( 'c', (int) ( $delivery['at'] ?? 0 ) ) )
				: __( 'none sent yet', 'askwpd-companion' ),
		);

		$info['askwpd-companion'] = array(
			'label'       => __( 'AskWP Companion (askwpd)', 'askwpd-companion' ),
			'description' => __( 'How this site reaches the askwpd daemon, and the state of its index. Secrets are not shown.', 'askwpd-companion' ),
			'fields'      => $fields,
		);
		return $info;
	}
}
