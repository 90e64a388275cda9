<?php
/**
 * Insights: what visitors ask and what the site does not answer (Tools → AskWP
 * Insights), and the feedback route widgets call to vote on a chat answer.
 *
 * The report is the daemon's (GET /v1/insights); the shim only shows it. Feedback is
 * POST /askwpd-companion/v1/feedback {turn_id, vote: up|down, comment}: checked for a
 * REST nonce (wp_rest), the site's origin and a per-visitor rate limit, then passed to
 * the daemon's POST /v1/feedback. Nothing identifying the visitor is sent or stored: the
 * rate limit keys on a salted hash of the address, kept for one window.
 *
 * @package askwpd-companion
 */

if ( ! defined( 'ABSPATH' ) ) {
	exit;
}

final class Askwpd_Insights {

	const SLUG      = 'askwpd-insights';
	const NAMESPACE = 'askwpd-companion/v1';

	public static function init(): void {
		add_action( 'rest_api_init', array( __CLASS__, 'register_routes' ) );
		add_action( 'admin_menu', array( __CLASS__, 'menu' ) );
		add_action( 'admin_post_askwpd_insights_csv', array( __CLASS__, 'handle_csv' ) );
		add_action( 'admin_init', array( __CLASS__, 'privacy_policy' ) );
	}

	public static function register_routes(): void {
		register_rest_route(
			self::NAMESPACE,
			'/feedback',
			array(
				'methods'             => 'POST',
				'callback'            => array( __CLASS__, 'feedback' ),
				'permission_callback' => '__return_true', // Public, like the chat; feedback() checks nonce, origin and rate.
			)
		);
	}

	// --- feedback ---------------------------------------------------------------------------

	/**
	 * Checks a feedback request and builds the daemon's body from it.
	 *
	 * @param mixed $in Decoded JSON.
	 * @return array|WP_Error
	 */
	public static function feedback_body( $in ) {
		if ( ! is_array( $in ) ) {
			return new WP_Error( 'askwpd_bad_request', __( 'The feedback must be a JSON object.', 'askwpd-companion' ), array( 'status' => 400 ) );
		}
		$turn = isset( $in['turn_id'] ) && is_string( $in['turn_id'] ) ? $in['turn_id'] : '';
		if ( ! preg_match( '/^[0-9a-f]{32}$/', $turn ) ) {
			return new WP_Error( 'askwpd_bad_request', __( 'turn_id must be the turn_id of a chat answer.', 'askwpd-companion' ), array( 'status' => 400 ) );
		}
		$vote = isset( $in['vote'] ) && is_string( $in['vote'] ) ? $in['vote'] : '';
		if ( ! in_array( $vote, array( 'up', 'down' ), true ) ) {
			return new WP_Error( 'askwpd_bad_request', __( 'vote must be "up" or "down".', 'askwpd-companion' ), array( 'status' => 400 ) );
		}
		$comment = isset( $in['comment'] ) && is_string( $in['comment'] ) ? trim( wp_check_invalid_utf8( $in['comment'], true ) ) : '';
		if ( mb_strlen( $comment ) > 500 ) {
			return new WP_Error( 'askwpd_bad_request', __( 'The comment is longer than 500 characters.', 'askwpd-companion' ), array( 'status' => 400 ) );
		}
		return array(
			'turn_id' => $turn,
			'vote'    => $vote,
			'comment' => sanitize_textarea_field( $comment ),
		);
	}

	/**
	 * POST /askwpd-companion/v1/feedback.
	 *
	 * @param WP_REST_Request $request Request.
	 */
	public static function feedback( WP_REST_Request $request ) {
		$nonce = (string) $request->get_header( 'x_wp_nonce' );
		if ( '' === $nonce ) {
			$nonce = (string) $request->get_param( '_wpnonce' );
		}
		if ( ! wp_verify_nonce( $nonce, 'wp_rest' ) ) {
			return new WP_Error( 'askwpd_bad_nonce', __( 'The page is out of date; reload it and vote again.', 'askwpd-companion' ), array( 'status' => 403 ) );
		}
		if ( ! Askwpd_Chat::origin_ok() ) {
			return new WP_Error( 'askwpd_origin', __( 'Cross-origin feedback is not allowed.', 'askwpd-companion' ), array( 'status' => 403 ) );
		}
		if ( self::rate_limited() ) {
			return new WP_Error( 'askwpd_rate_limited', __( 'Too many votes; wait a minute and try again.', 'askwpd-companion' ), array( 'status' => 429 ) );
		}
		$raw  = (string) $request->get_body();
		$in   = '' !== $raw ? json_decode( $raw, true ) : $request->get_params();
		$body = self::feedback_body( $in );
		if ( is_wp_error( $body ) ) {
			return $body;
		}
		$r = Askwpd_Client::request( 'POST', '/v1/feedback', (string) wp_json_encode( $body ), array( 'Content-Type: application/json' ), array( 'timeout_ms' => 3000 ) );
		$d = Askwpd_Client::json( $r );
		if ( 200 === $r['status'] ) {
			return new WP_REST_Response( array( 'ok' => true ), 200 );
		}
		if ( in_array( $r['status'], array( 400, 404 ), true ) ) {
			$msg = is_array( $d ) && isset( $d['error']['message'] ) && is_string( $d['error']['message'] ) ? $d['error']['message'] : __( 'The vote was refused.', 'askwpd-companion' );
			return new WP_Error( 'askwpd_rejected', $msg, array( 'status' => $r['status'] ) );
		}
		return new WP_Error( 'askwpd_unavailable', __( 'Feedback cannot be recorded right now.', 'askwpd-companion' ), array( 'status' => 503 ) );
	}

	/** array(limit, window seconds); ASKWPD_FEEDBACK_RATE_LIMIT may say "10/60". */
	public static function rate_limit(): array {
		$limit  = 10;
		$window = 60;
		if ( defined( 'ASKWPD_FEEDBACK_RATE_LIMIT' ) && preg_match( '#^(\d+)(?:/(\d+))?$#', (string) ASKWPD_FEEDBACK_RATE_LIMIT, $m ) ) {
			$limit  = (int) $m[1];
			$window = isset( $m[2] ) ? max( 1, (int) $m[2] ) : 60;
		}
		return (array) apply_filters( 'askwpd_feedback_rate_limit', array( $limit, $window ) );
	}

	/**
	 * Counts this visitor's votes in the current window, atomically (the chat's
	 * counter: the object cache's incr, else one upsert on a row), and says whether
	 * the limit is passed. The key is the chat's hashed address under a prefix of its
	 * own within the chat's (whose expired rows the chat prunes), so votes and chats
	 * are counted apart.
	 */
	public static function rate_limited(): bool {
		list( $limit, $window ) = self::rate_limit();
		if ( $limit <= 0 ) {
			return false;
		}
		$key = 'askwpd_rl_fb_' . substr( Askwpd_Chat::ip_key(), strlen( 'askwpd_rl_' ) );
		return Askwpd_Chat::hit( $key, max( 1, (int) $window ) ) > $limit;
	}

	// --- the Tools page ---------------------------------------------------------------------

	public static function menu(): void {
		add_management_page( __( 'AskWP Insights', 'askwpd-companion' ), __( 'AskWP Insights', 'askwpd-companion' ), 'manage_options', self::SLUG, array( __CLASS__, 'render' ) );
	}

	/** What the question log stores, for how long, and how to turn it off. */
	public static function privacy_text(): string {
		return __( 'askwpd keeps a log of the questions visitors ask the site\'s search tools and chat, to show which ones the site answers and which it does not. For each question it stores the time, the question with email addresses, phone numbers and long numbers removed, what the site found (the best matching pages, whether it answered), and a visitor\'s optional vote and comment on a chat answer. It stores no IP address, user id or cookie. Questions are deleted after 30 days (the daemon\'s insights.retention_days). Set insights.retention_days = 0 in /etc/askwpd/askwpd.toml (or ASKWPD_INSIGHTS_RETENTION_DAYS=0) to turn the log off; what it kept is then deleted.', 'askwpd-companion' );
	}

	public static function privacy_policy(): void {
		if ( function_exists( 'wp_add_privacy_policy_content' ) ) {
			wp_add_privacy_policy_content( __( 'AskWP Companion (askwpd)', 'askwpd-companion' ), '<p>' . esc_html( self::privacy_text() ) . '</p>' );
		}
	}

	/**
	 * The daemon's report, or a WP_Error.
	 *
	 * @param string $query Query string for /v1/insights.
	 * @return array|WP_Error
	 */
	public static function report( string $query = 'limit=20' ) {
		$r = Askwpd_Client::request( 'GET', '/v1/insights?' . $query, null, array( 'Accept: application/json' ), array( 'timeout_ms' => 5000 ) );
		$d = Askwpd_Client::json( $r );
		if ( 200 !== $r['status'] || ! is_array( $d ) ) {
			/* translators: 1: an HTTP status (0 when the daemon did not answer), 2: an error message */
			return new WP_Error( 'askwpd_insights', sprintf( __( 'The daemon did not return its report (HTTP %1$d %2$s). See Tools → AskWP Index.', 'askwpd-companion' ), $r['status'], $r['error'] ) );
		}
		return $d;
	}

	public static function render(): void {
		if ( ! current_user_can( 'manage_options' ) ) {
			return;
		}
		echo '<div class="wrap askwpd-insights"><h1>' . esc_html__( 'AskWP Insights', 'askwpd-companion' ) . '</h1>';
		$d = self::report();
		if ( is_wp_error( $d ) ) {
			echo '<div class="notice notice-error inline"><p>' . esc_html( $d->get_error_message() ) . '</p></div>';
		} else {
			self::render_report( $d );
		}
		echo '<h2>' . esc_html__( 'Privacy', 'askwpd-companion' ) . '</h2><p class="askwpd-privacy" style="max-width:900px">' . esc_html( self::privacy_text() ) . '</p></div>';
	}

	/**
	 * The report's figures and groups.
	 *
	 * @param array $d GET /v1/insights.
	 */
	private static function render_report( array $d ): void {
		$by = is_array( $d['by_status'] ?? null ) ? $d['by_status'] : array();
		printf(
			'<p class="askwpd-insights-summary" data-questions="%d">%s</p>',
			(int) ( $d['questions'] ?? 0 ),
			esc_html(
				sprintf(
					/* translators: 1: number of questions, 2-5: counts by outcome, 6-7: votes */
					__( '%1$d questions in the last 30 days: %2$d answered, %3$d not answered, %4$d with thin evidence, %5$d unclear. Votes: %6$d up, %7$d down.', 'askwpd-companion' ),
					(int) ( $d['questions'] ?? 0 ),
					(int) ( $by['answered'] ?? 0 ),
					(int) ( $by['no_match'] ?? 0 ),
					(int) ( $by['thin'] ?? 0 ),
					(int) ( $by['clarify'] ?? 0 ),
					(int) ( $d['votes_up'] ?? 0 ),
					(int) ( $d['votes_down'] ?? 0 )
				)
			)
		);
		if ( 0 === (int) ( $d['retention_days'] ?? 0 ) ) {
			echo '<div class="notice notice-info inline"><p>' . esc_html__( 'The question log is off (insights.retention_days = 0).', 'askwpd-companion' ) . '</p></div>';
		}
		echo '<form method="post" action="' . esc_url( admin_url( 'admin-post.php' ) ) . '">';
		wp_nonce_field( 'askwpd_insights_csv' );
		echo '<input type="hidden" name="action" value="askwpd_insights_csv">';
		submit_button( __( 'Download the report (CSV)', 'askwpd-companion' ), 'secondary', 'submit', false );
		echo '</form>';

		echo '<h2>' . esc_html__( 'What the site does not answer', 'askwpd-companion' ) . '</h2>';
		self::table( is_array( $d['gaps'] ?? null ) ? $d['gaps'] : array(), true );
		echo '<h2>' . esc_html__( 'Most asked, answered', 'askwpd-companion' ) . '</h2>';
		self::table( is_array( $d['answered'] ?? null ) ? $d['answered'] : array(), false );
	}

	/**
	 * One list of groups.
	 *
	 * @param array $groups Groups.
	 * @param bool  $gaps   Gaps (with the page to write) or answered (with the pages).
	 */
	private static function table( array $groups, bool $gaps ): void {
		if ( ! $groups ) {
			echo '<p>' . esc_html__( 'None.', 'askwpd-companion' ) . '</p>';
			return;
		}
		printf(
			'<table class="widefat striped %s" style="max-width:1100px"><thead><tr><th>%s</th><th>%s</th><th>%s</th><th>%s</th><th>%s</th></tr></thead><tbody>',
			$gaps ? 'askwpd-gaps' : 'askwpd-answered',
			esc_html__( 'Questions', 'askwpd-companion' ),
			esc_html__( 'Kind', 'askwpd-companion' ),
			esc_html__( 'Count', 'askwpd-companion' ),
			$gaps ? esc_html__( 'Closest page', 'askwpd-companion' ) : esc_html__( 'Answered by', 'askwpd-companion' ),
			esc_html__( 'Trend', 'askwpd-companion' )
		);
		foreach ( $groups as $g ) {
			if ( ! is_array( $g ) ) {
				continue;
			}
			$ex    = array_map( 'esc_html', array_map( 'strval', is_array( $g['examples'] ?? null ) ? $g['examples'] : array() ) );
			$pages = $gaps ? array_filter( array( (string) ( $g['near_miss'] ?? '' ) ) ) : array_map( 'strval', is_array( $g['pages'] ?? null ) ? $g['pages'] : array() );
			$links = array();
			foreach ( $pages as $p ) {
				$links[] = '<a href="' . esc_url( $p ) . '">' . esc_html( $p ) . '</a>';
			}
			printf(
				'<tr><td>%s%s</td><td>%s</td><td>%d</td><td>%s</td><td>%s</td></tr>',
				implode( '<br>', $ex ), // phpcs:ignore WordPress.Security.EscapeOutput -- each escaped above.
				$gaps && ! empty( $g['prompt'] ) ? '<p class="description">' . esc_html( (string) $g['prompt'] ) . '</p>' : '',
				esc_html( (string) ( $g['kind'] ?? '' ) ),
				(int) ( $g['count'] ?? 0 ),
				$links ? implode( '<br>', $links ) : '&mdash;', // phpcs:ignore WordPress.Security.EscapeOutput -- each escaped above.
				esc_html( (string) ( $g['trend'] ?? '' ) )
			);
		}
		echo '</tbody></table>';
	}

	/** admin-post: the daemon's CSV, passed through as a download. */
	public static function handle_csv(): void {
		if ( ! current_user_can( 'manage_options' ) ) {
			wp_die( esc_html__( 'You are not allowed to do this.', 'askwpd-companion' ), 403 );
		}
		check_admin_referer( 'askwpd_insights_csv' );
		$r = Askwpd_Client::request( 'GET', '/v1/insights?format=csv&limit=1000', null, array( 'Accept: text/csv' ), array( 'timeout_ms' => 10000 ) );
		if ( 200 !== $r['status'] ) {
			wp_die( esc_html__( 'The daemon did not return its report; see Tools → AskWP Index.', 'askwpd-companion' ), 502 );
		}
		nocache_headers();
		header( 'Content-Type: text/csv; charset=utf-8' );
		header( 'Content-Disposition: attachment; filename="askwpd-insights.csv"' );
		echo $r['body']; // phpcs:ignore WordPress.Security.EscapeOutput -- a CSV download, not HTML.
		exit;
	}
}
