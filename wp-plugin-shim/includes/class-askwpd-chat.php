<?php
/**
 * The chat proxy: its own REST route, and AskWP's two public endpoints served from the
 * daemon while it is healthy.
 *
 * AskWP compatibility takes nothing from AskWP's code. Its REST route is taken over in
 * rest_pre_dispatch, which runs before route matching, and its streaming admin-ajax
 * action is hooked at an earlier priority. Whenever the daemon does not serve a request
 * (unreachable, no chat, an error before the first byte), the shim returns without
 * output and AskWP's own handler runs; without AskWP, the shim answers with an error in
 * the same wire format.
 *
 * @package askwpd-companion
 */

if ( ! defined( 'ABSPATH' ) ) {
	exit;
}

final class Askwpd_Chat {

	const NAMESPACES   = array( 'askwpd-companion/v1', 'askwp-companion/v1' );
	const ASKWP_ROUTE  = '/askwp/v1/chat';
	const ASKWP_ACTION = 'askwp_stream_chat';
	const PRIORITY     = 1;

	public static function init(): void {
		add_action( 'rest_api_init', array( __CLASS__, 'register_routes' ) );
		add_filter( 'rest_pre_dispatch', array( __CLASS__, 'askwp_rest' ), 5, 3 );
		add_action( 'wp_ajax_nopriv_' . self::ASKWP_ACTION, array( __CLASS__, 'askwp_stream' ), self::PRIORITY );
		add_action( 'wp_ajax_' . self::ASKWP_ACTION, array( __CLASS__, 'askwp_stream' ), self::PRIORITY );
	}

	public static function register_routes(): void {
		foreach ( self::NAMESPACES as $ns ) {
			register_rest_route(
				$ns,
				'/chat',
				array(
					'methods'             => 'POST',
					'callback'            => array( __CLASS__, 'companion_chat' ),
					'permission_callback' => '__return_true', // A public chat; guard() limits it.
				)
			);
		}
	}

	// --- guards -------------------------------------------------------------------------

	/**
	 * Origin, size and rate checks, in that order; the rate counts every request that
	 * passes the first two, valid or not.
	 *
	 * @param string $raw The raw request body.
	 * @return array|null null when allowed, else array(status, code, message).
	 */
	public static function guard( string $raw ): ?array {
		if ( ! self::origin_ok() ) {
			return array( 403, 'askwpd_origin', __( 'Cross-origin chat requests are not allowed.', 'askwpd-companion' ) );
		}
		if ( strlen( $raw ) > self::max_bytes() ) {
			return array( 413, 'askwpd_too_large', __( 'The chat request is too large.', 'askwpd-companion' ) );
		}
		if ( self::rate_limited() ) {
			return array( 429, 'askwpd_rate_limited', __( 'Too many chat requests; wait a minute and try again.', 'askwpd-companion' ) );
		}
		return null;
	}

	public static function max_bytes(): int {
		$n = defined( 'ASKWPD_CHAT_MAX_BYTES' ) ? (int) ASKWPD_CHAT_MAX_BYTES : 65536;
		return (int) apply_filters( 'askwpd_chat_max_bytes', $n );
	}

	/** Browsers send Origin on every POST; a missing one is a same-origin or non-browser caller. */
	public static function origin_ok(): bool {
		$origin = isset( $_SERVER['HTTP_ORIGIN'] ) ? (string) wp_unslash( $_SERVER['HTTP_ORIGIN'] ) : ''; // phpcs:ignore WordPress.Security.ValidatedSanitizedInput
		if ( '' === $origin ) {
			$site = isset( $_SERVER['HTTP_SEC_FETCH_SITE'] ) ? (string) $_SERVER['HTTP_SEC_FETCH_SITE'] : ''; // phpcs:ignore WordPress.Security.ValidatedSanitizedInput
			return in_array( $site, array( '', 'same-origin', 'none' ), true );
		}
		$allowed = array( self::origin_of( home_url() ), self::origin_of( site_url() ) );
		/**
		 * Filters the origins allowed to call the chat proxy (scheme://host[:port]).
		 *
		 * @param string[] $allowed Origins.
		 */
		$allowed = array_map( array( __CLASS__, 'origin_of' ), (array) apply_filters( 'askwpd_allowed_origins', $allowed ) );
		return in_array( self::origin_of( $origin ), $allowed, true );
	}

	public static function origin_of( string $url ): string {
		$p = wp_parse_url( $url );
		if ( empty( $p['scheme'] ) || empty( $p['host'] ) ) {
			return '';
		}
		$scheme = strtolower( $p['scheme'] );
		$port   = isset( $p['port'] ) ? (int) $p['port'] : 0;
		if ( ( 'http' === $scheme && 80 === $port ) || ( 'https' === $scheme && 443 === $port ) ) {
			$port = 0;
		}
		return $scheme . '://' . strtolower( $p['host'] ) . ( $port ? ':' . $port : '' );
	}

	/** array(limit, window seconds); ASKWPD_CHAT_RATE_LIMIT may say "20/60". */
	public static function rate_limit(): array {
		$limit  = 20;
		$window = 60;
		if ( defined( 'ASKWPD_CHAT_RATE_LIMIT' ) && preg_match( '#^(\d+)(?:/(\d+))?$#', (string) ASKWPD_CHAT_RATE_LIMIT, $m ) ) {
			$limit  = (int) $m[1];
			$window = isset( $m[2] ) ? max( 1, (int) $m[2] ) : 60;
		}
		return (array) apply_filters( 'askwpd_chat_rate_limit', array( $limit, $window ) );
	}

	/** The client's address, hashed with a site secret so no IP is stored. */
	public static function ip_key(): string {
		$ip = isset( $_SERVER['REMOTE_ADDR'] ) ? (string) $_SERVER['REMOTE_ADDR'] : ''; // phpcs:ignore WordPress.Security.ValidatedSanitizedInput
		$ip = (string) apply_filters( 'askwpd_client_ip', $ip );
		return 'askwpd_rl_' . substr( hash_hmac( 'sha256', $ip, wp_salt( 'nonce' ) ), 0, 32 );
	}

	private static function rate_limited(): bool {
		list( $limit, $window ) = self::rate_limit();
		if ( $limit <= 0 ) {
			return false;
		}
		return self::hit( self::ip_key(), max( 1, (int) $window ) ) > $limit;
	}

	/**
	 * Counts one request against a key's window and returns the count, this request
	 * included. The window starts at the key's first request. Atomic, so that requests
	 * arriving together cannot all read the same count: the object cache's incr where
	 * there is a persistent one, else one INSERT ... ON DUPLICATE KEY UPDATE whose new
	 * count comes back through LAST_INSERT_ID(expr), on the same connection. (Hence the
	 * direct queries, Plugin Check's DirectDatabaseQuery exceptions: a cached count would
	 * not be atomic.)
	 *
	 * @param string $key    Counter name (at most 64 characters).
	 * @param int    $window Seconds.
	 */
	public static function hit( string $key, int $window ): int {
		if ( wp_using_ext_object_cache() ) {
			wp_cache_add( $key, 0, 'askwpd_rate', $window );
			$n = wp_cache_incr( $key, 1, 'askwpd_rate' );
			if ( false !== $n ) {
				return (int) $n;
			}
			// Evicted between add and incr: the table counts instead.
		}
		global $wpdb;
		Askwpd_Outbox::maybe_install();
		$t   = Askwpd_Outbox::counters_table();
		$now = time();
		// InnoDB may pick this upsert as a deadlock victim when others run on the same
		// index at once (other visitors' counts, the outbox's lock row, which WP-Cron
		// takes in the background); the standard answer is to run it again, a moment
		// later, once the other statement is through.
		for ( $try = 0; $try < 5; $try++ ) {
			if ( $try > 0 ) {
				usleep( 2000 * $try );
			}
			$ok = $wpdb->query( // phpcs:ignore WordPress.DB.PreparedSQL.InterpolatedNotPrepared,WordPress.DB.DirectDatabaseQuery -- our table name.
				$wpdb->prepare(
					"INSERT INTO $t (name, window_start, hits) VALUES (%s, %d, 1)
					ON DUPLICATE KEY UPDATE
						hits = LAST_INSERT_ID(IF(window_start + %d <= %d, 1, hits + 1)),
						window_start = IF(window_start + %d <= %d, %d, window_start)",
					$key,
					$now,
					$window,
					$now,
					$window,
					$now,
					$now
				)
			);
			if ( false !== $ok || false === stripos( (string) $wpdb->last_error, 'deadlock' ) ) {
				break;
			}
		}
		if ( false === $ok ) {
			// The database failed: the chat itself will say so, not the limit. The log
			// says why the request went uncounted.
			error_log( 'askwpd: the chat rate limit could not count a request: ' . $wpdb->last_error ); // phpcs:ignore WordPress.PHP.DevelopmentFunctions.error_log_error_log
			return 0;
		}
		if ( 0 === wp_rand( 0, 199 ) ) {
			// Visitors' expired windows, now and then, so the table stays small.
			$wpdb->query( $wpdb->prepare( "DELETE FROM $t WHERE name LIKE %s AND window_start < %d", $wpdb->esc_like( 'askwpd_rl_' ) . '%', $now - DAY_IN_SECONDS ) ); // phpcs:ignore WordPress.DB.PreparedSQL.InterpolatedNotPrepared,WordPress.DB.DirectDatabaseQuery -- see hit().
		}
		// 1: a new row, the first request; 2: an update, whose count LAST_INSERT_ID holds.
		return 1 === (int) $wpdb->rows_affected ? 1 : (int) $wpdb->insert_id;
	}

	/** Forgets a key's count (tests). */
	public static function reset_hits( string $key ): void {
		global $wpdb;
		if ( wp_using_ext_object_cache() ) {
			wp_cache_delete( $key, 'askwpd_rate' );
		}
		$wpdb->query( $wpdb->prepare( 'DELETE FROM ' . Askwpd_Outbox::counters_table() . ' WHERE name = %s', $key ) ); // phpcs:ignore WordPress.DB.PreparedSQL.InterpolatedNotPrepared,WordPress.DB.DirectDatabaseQuery -- see hit().
	}

	// --- payload ------------------------------------------------------------------------

	/**
	 * Validates a chat request and builds the daemon's body from it. Only user and
	 * assistant turns pass: a page cannot inject a system prompt.
	 *
	 * @param mixed $in Decoded JSON.
	 * @return array|WP_Error The daemon request.
	 */
	public static function payload( $in ) {
		if ( ! is_array( $in ) || empty( $in['messages'] ) || ! is_array( $in['messages'] ) ) {
			return new WP_Error( 'askwpd_bad_request', 'messages is required.', array( 'status' => 400 ) );
		}
		$msgs = array();
		foreach ( array_slice( array_values( $in['messages'] ), -50 ) as $m ) {
			if ( ! is_array( $m ) || ! isset( $m['role'], $m['content'] ) || ! is_string( $m['content'] ) ) {
				return new WP_Error( 'askwpd_bad_request', __( 'Each message needs a role and a text content.', 'askwpd-companion' ), array( 'status' => 400 ) );
			}
			if ( ! in_array( $m['role'], array( 'user', 'assistant' ), true ) ) {
				continue;
			}
			$content = trim( wp_check_invalid_utf8( $m['content'], true ) );
			if ( '' === $content ) {
				continue;
			}
			$msgs[] = array(
				'role'    => $m['role'],
				'content' => mb_substr( $content, 0, 8000 ),
			);
		}
		if ( ! $msgs || 'user' !== $msgs[ count( $msgs ) - 1 ]['role'] ) {
			return new WP_Error( 'askwpd_bad_request', __( 'The last message must be from the user.', 'askwpd-companion' ), array( 'status' => 400 ) );
		}
		$page_url = isset( $in['page_url'] ) && is_string( $in['page_url'] ) ? esc_url_raw( $in['page_url'], array( 'http', 'https' ) ) : '';
		$home     = wp_parse_url( home_url(), PHP_URL_HOST );
		if ( '' !== $page_url && strtolower( (string) wp_parse_url( $page_url, PHP_URL_HOST ) ) !== strtolower( (string) $home ) ) {
			$page_url = ''; // Only pages of this site give context.
		}
		$title = isset( $in['page_title'] ) && is_string( $in['page_title'] ) ? mb_substr( sanitize_text_field( $in['page_title'] ), 0, 200 ) : '';
		return array(
			'messages'   => $msgs,
			'page_url'   => $page_url,
			'page_title' => $title,
		);
	}

	// --- mapping to AskWP's wire format --------------------------------------------------

	/**
	 * Sources as AskWP shows them: title and URL, each URL once.
	 *
	 * @param mixed $sources The daemon's sources.
	 */
	public static function askwp_sources( $sources ): array {
		$out  = array();
		$seen = array();
		foreach ( is_array( $sources ) ? $sources : array() as $s ) {
			if ( ! is_array( $s ) || empty( $s['url'] ) || ! is_string( $s['url'] ) || isset( $seen[ $s['url'] ] ) ) {
				continue;
			}
			$seen[ $s['url'] ] = true;
			$out[]             = array(
				'title' => isset( $s['title'] ) && is_string( $s['title'] ) && '' !== $s['title'] ? $s['title'] : $s['url'],
				'url'   => $s['url'],
			);
		}
		return $out;
	}

	/**
	 * The daemon's JSON reply in AskWP's REST shape.
	 *
	 * @param array $d Daemon reply.
	 */
	public static function askwp_reply( array $d ): array {
		return array(
			'reply'   => isset( $d['reply'] ) && is_string( $d['reply'] ) ? $d['reply'] : '',
			'sources' => self::askwp_sources( $d['sources'] ?? array() ),
			'action'  => null,
			'usage'   => $d['usage'] ?? null,
		);
	}

	/**
	 * A parser for text/event-stream: feed it bytes, get back complete events as
	 * array(event name, decoded data).
	 */
	public static function sse_parser(): callable {
		$buf = '';
		return static function ( string $bytes ) use ( &$buf ): array {
			$buf   .= $bytes;
			$buf    = str_replace( "\r\n", "\n", $buf );
			$events = array();
			while ( false !== ( $pos = strpos( $buf, "\n\n" ) ) ) {
				$block = substr( $buf, 0, $pos );
				$buf   = (string) substr( $buf, $pos + 2 );
				$name  = '';
				$data  = array();
				foreach ( explode( "\n", $block ) as $line ) {
					if ( '' === $line || ':' === $line[0] ) {
						continue;
					}
					$parts = explode( ':', $line, 2 );
					$val   = isset( $parts[1] ) ? ltrim( $parts[1], ' ' ) : '';
					if ( 'event' === $parts[0] ) {
						$name = trim( $val );
					} elseif ( 'data' === $parts[0] ) {
						$data[] = $val;
					}
				}
				if ( ! $data && '' === $name ) {
					continue;
				}
				$raw     = implode( "\n", $data );
				$decoded = json_decode( $raw, true );
				$events[] = array( $name, null === $decoded && 'null' !== $raw ? $raw : $decoded );
			}
			return $events;
		};
	}

	/**
	 * One daemon SSE event as AskWP's SSE payloads (zero or one object).
	 *
	 * @param string $name Event name (status, delta, done, error).
	 * @param mixed  $d    Decoded data.
	 */
	public static function askwp_event( string $name, $d ): ?array {
		if ( '' === $name || 'message' === $name ) {
			foreach ( array( 'error', 'done', 'delta', 'status' ) as $k ) {
				if ( is_array( $d ) && array_key_exists( $k, $d ) ) {
					$name = $k;
					break;
				}
			}
		}
		$text = static function ( $d, array $keys ) {
			if ( is_string( $d ) ) {
				return $d;
			}
			foreach ( $keys as $k ) {
				if ( is_array( $d ) && isset( $d[ $k ] ) ) {
					if ( is_string( $d[ $k ] ) ) {
						return $d[ $k ];
					}
					if ( is_array( $d[ $k ] ) && isset( $d[ $k ]['message'] ) && is_string( $d[ $k ]['message'] ) ) {
						return $d[ $k ]['message'];
					}
				}
			}
			return '';
		};
		switch ( $name ) {
			case 'status':
				return array( 'status' => $text( $d, array( 'status', 'message', 'text' ) ) );
			case 'delta':
				return array( 'delta' => $text( $d, array( 'delta', 'text', 'content' ) ) );
			case 'error':
				if ( self::no_provider( $d ) || ( is_array( $d ) && 'no_provider' === ( $d['code'] ?? '' ) ) ) {
					return array( 'error' => self::no_provider_message() );
				}
				$msg = $text( $d, array( 'error', 'message' ) );
				return array( 'error' => '' === $msg ? __( 'The assistant failed.', 'askwpd-companion' ) : $msg );
			case 'done':
				return array(
					'done'    => true,
					'sources' => self::askwp_sources( is_array( $d ) ? ( $d['sources'] ?? array() ) : array() ),
					'usage'   => is_array( $d ) ? ( $d['usage'] ?? null ) : null,
				);
		}
		return null;
	}

	// --- AskWP REST ------------------------------------------------------------------------

	/**
	 * rest_pre_dispatch: serves POST /askwp/v1/chat from the daemon, or returns $result
	 * untouched so that routing goes on to AskWP's handler.
	 *
	 * @param mixed           $result  Earlier filters' result.
	 * @param WP_REST_Server  $server  Server.
	 * @param WP_REST_Request $request Request.
	 */
	public static function askwp_rest( $result, $server, $request ) {
		if ( null !== $result || ! $request instanceof WP_REST_Request || 'POST' !== $request->get_method()
			|| self::ASKWP_ROUTE !== untrailingslashit( $request->get_route() ) ) {
			return $result;
		}
		$raw = (string) $request->get_body();
		$bad = self::guard( $raw );
		if ( $bad ) {
			return new WP_Error( $bad[1], $bad[2], array( 'status' => $bad[0] ) );
		}
		$in = json_decode( $raw, true );
		if ( ! is_array( $in ) ) {
			$in = $request->get_params();
		}
		$body = self::payload( $in );
		if ( is_wp_error( $body ) ) {
			return $body;
		}
		$r = self::forward( $body );
		$d = Askwpd_Client::json( $r );
		if ( 200 === $r['status'] && is_array( $d ) ) {
			return new WP_REST_Response( self::askwp_reply( $d ), 200 );
		}
		$refusal = self::daemon_refusal( $r, $d );
		if ( $refusal ) {
			return self::refusal_response( $refusal );
		}
		$no_provider = self::no_provider( $d );
		if ( $r['status'] >= 400 && $r['status'] < 500 && ! in_array( $r['status'], array( 401, 403, 404, 405 ), true ) ) {
			return new WP_Error( 'askwpd_rejected', self::daemon_message( $d, __( 'The assistant could not answer this request.', 'askwpd-companion' ) ), array( 'status' => $r['status'] ) );
		}
		// The daemon did not serve it: AskWP's own route, when there is one, does.
		if ( isset( $server->get_routes()[ self::ASKWP_ROUTE ] ) ) {
			return $result;
		}
		if ( $no_provider ) {
			return new WP_Error( 'askwpd_no_provider', self::no_provider_message(), array( 'status' => 503 ) );
		}
		return new WP_Error( 'askwpd_unavailable', __( 'The assistant is unavailable right now.', 'askwpd-companion' ), array( 'status' => 503 ) );
	}

	// --- AskWP streaming ----------------------------------------------------------------

	/**
	 * admin-ajax askwp_stream_chat at priority 1: streams the daemon's answer in AskWP's
	 * SSE format and exits, or returns without output so AskWP's handler runs.
	 */
	public static function askwp_stream(): void {
		$raw = (string) file_get_contents( 'php://input' );
		$bad = self::guard( $raw );
		if ( $bad ) {
			self::sse_fail( $bad[0], $bad[2] );
		}
		$in = json_decode( $raw, true );
		if ( ! is_array( $in ) ) {
			$in = wp_unslash( $_POST ); // phpcs:ignore WordPress.Security.NonceVerification -- a public chat, like AskWP's.
			if ( isset( $in['messages'] ) && is_string( $in['messages'] ) ) {
				$in['messages'] = json_decode( $in['messages'], true );
			}
		}
		$body = self::payload( $in );
		if ( is_wp_error( $body ) ) {
			self::sse_fail( 400, $body->get_error_message() );
		}

		$parse = self::sse_parser();
		$mode  = 'sse';
		$json  = '';
		$ended = false;
		$said  = false;
		$on_start = static function ( $status, $ctype ) use ( &$mode ) {
			if ( 200 !== $status ) {
				return false;
			}
			$mode = 0 === stripos( (string) $ctype, 'text/event-stream' ) ? 'sse' : 'json';
			self::sse_headers( 200 );
			return true;
		};
		$on_chunk = static function ( $bytes ) use ( &$mode, &$json, &$ended, &$said, $parse ) {
			if ( 'json' === $mode ) {
				$json .= $bytes;
				return true;
			}
			foreach ( $parse( $bytes ) as $ev ) {
				$out = self::askwp_event( $ev[0], $ev[1] );
				if ( null === $out ) {
					continue;
				}
				if ( isset( $out['delta'] ) ) {
					$said = $said || '' !== $out['delta'];
				} elseif ( isset( $out['done'] ) && ! $said && is_array( $ev[1] ) && ! empty( $ev[1]['reply'] ) && is_string( $ev[1]['reply'] ) ) {
					// A reply that came without deltas (a fallback answer) still reaches the widget.
					self::sse_emit( array( 'delta' => $ev[1]['reply'] ) );
				}
				self::sse_emit( $out );
				if ( isset( $out['done'] ) || isset( $out['error'] ) ) {
					$ended = true;
				}
			}
			return ! connection_aborted();
		};

		$encoded = (string) wp_json_encode( $body, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE );
		if ( function_exists( 'curl_init' ) ) {
			$r = Askwpd_Client::stream( '/v1/chat', $encoded, array( 'Content-Type: application/json', 'Accept: text/event-stream' ), $on_start, $on_chunk, self::chat_timeouts() );
		} else {
			$r    = self::forward( $body );
			$mode = 'json';
			$json = $r['body'];
			if ( 200 === $r['status'] ) {
				self::sse_headers( 200 );
				$r['started'] = true;
			} else {
				$r['started'] = false;
			}
		}

		if ( ! $r['started'] ) {
			$refusal = self::daemon_refusal( $r, json_decode( $r['body'], true ) );
			if ( $refusal ) {
				// The daemon's cap or budget: AskWP would spend the same provider, so no step aside.
				if ( ! headers_sent() ) {
					header( 'Retry-After: ' . $refusal[1] );
				}
				self::sse_fail( 429, $refusal[0] );
			}
			if ( self::other_handlers( current_action() ) ) {
				return; // Step aside: AskWP answers.
			}
			if ( self::no_provider( json_decode( $r['body'], true ) ) ) {
				self::sse_fail( 503, self::no_provider_message() );
			}
			self::sse_fail( 503, __( 'The assistant is unavailable right now.', 'askwpd-companion' ) );
		}
		if ( 'json' === $mode ) {
			$d = json_decode( $json, true );
			if ( is_array( $d ) && isset( $d['reply'] ) ) {
				self::sse_emit( array( 'delta' => (string) $d['reply'] ) );
				self::sse_emit( self::askwp_event( 'done', $d ) );
			} else {
				self::sse_emit( array( 'error' => __( 'The assistant sent an unreadable answer.', 'askwpd-companion' ) ) );
			}
		} elseif ( ! $ended ) {
			self::sse_emit( array( 'error' => __( 'The answer was cut off.', 'askwpd-companion' ) ) );
		}
		self::sse_raw( "data: [DONE]\n\n" );
		exit;
	}

	/** Whether anything but the shim handles an admin-ajax action. */
	private static function other_handlers( string $hook ): bool {
		global $wp_filter;
		if ( empty( $wp_filter[ $hook ] ) ) {
			return false;
		}
		foreach ( $wp_filter[ $hook ]->callbacks as $cbs ) {
			foreach ( $cbs as $cb ) {
				if ( ! ( is_array( $cb['function'] ) && __CLASS__ === $cb['function'][0] ) ) {
					return true;
				}
			}
		}
		return false;
	}

	private static function sse_headers( int $status ): void {
		if ( ! headers_sent() ) {
			status_header( $status );
			header( 'Content-Type: text/event-stream; charset=utf-8' );
			header( 'Cache-Control: no-cache, no-store, no-transform' );
			header( 'X-Accel-Buffering: no' );
			header_remove( 'Content-Length' );
		}
		@ini_set( 'zlib.output_compression', '0' ); // phpcs:ignore WordPress.PHP.NoSilencedErrors,WordPress.PHP.IniSet
		while ( ob_get_level() > 0 ) {
			ob_end_clean();
		}
	}

	private static function sse_emit( array $obj ): void {
		self::sse_raw( 'data: ' . wp_json_encode( $obj, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE ) . "\n\n" );
	}

	private static function sse_raw( string $s ): void {
		echo $s; // phpcs:ignore WordPress.Security.EscapeOutput -- JSON in an event stream.
		flush();
	}

	/** Answers with one error event and [DONE], then exits. */
	private static function sse_fail( int $status, string $message ): void {
		self::sse_headers( $status );
		self::sse_emit( array( 'error' => $message ) );
		self::sse_raw( "data: [DONE]\n\n" );
		exit;
	}

	// --- the shim's own route -------------------------------------------------------------

	/**
	 * POST /askwpd-companion/v1/chat: the daemon's /v1/chat, JSON or, with
	 * Accept: text/event-stream, its event stream passed through byte for byte.
	 *
	 * @param WP_REST_Request $request Request.
	 */
	public static function companion_chat( WP_REST_Request $request ) {
		$raw = (string) $request->get_body();
		$bad = self::guard( $raw );
		if ( $bad ) {
			return new WP_Error( $bad[1], $bad[2], array( 'status' => $bad[0] ) );
		}
		$body = self::payload( json_decode( $raw, true ) );
		if ( is_wp_error( $body ) ) {
			return $body;
		}
		$stream = false !== stripos( (string) $request->get_header( 'accept' ), 'text/event-stream' );
		if ( $stream && function_exists( 'curl_init' ) ) {
			$on_start = static function ( $status, $ctype ) {
				if ( 200 !== $status ) {
					return false;
				}
				self::sse_headers( 200 );
				return true;
			};
			$on_chunk = static function ( $bytes ) {
				self::sse_raw( $bytes );
				return ! connection_aborted();
			};
			$encoded  = (string) wp_json_encode( $body, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE );
			$r        = Askwpd_Client::stream( '/v1/chat', $encoded, array( 'Content-Type: application/json', 'Accept: text/event-stream' ), $on_start, $on_chunk, self::chat_timeouts() );
			if ( $r['started'] ) {
				exit;
			}
			return self::daemon_error( $r, json_decode( $r['body'], true ) );
		}
		$r = self::forward( $body );
		$d = Askwpd_Client::json( $r );
		if ( 200 === $r['status'] && is_array( $d ) ) {
			return new WP_REST_Response( $d, 200 );
		}
		return self::daemon_error( $r, $d );
	}

	/**
	 * @param array      $r A client result.
	 * @param array|null $d Its decoded body.
	 */
	private static function daemon_error( array $r, $d ) {
		$refusal = self::daemon_refusal( $r, $d );
		if ( $refusal ) {
			return self::refusal_response( $refusal );
		}
		if ( 0 === $r['status'] ) {
			return new WP_Error( 'askwpd_unavailable', __( 'The assistant is unavailable right now.', 'askwpd-companion' ), array( 'status' => 503 ) );
		}
		if ( self::no_provider( $d ) ) {
			return new WP_Error( 'askwpd_no_provider', self::no_provider_message(), array( 'status' => 503 ) );
		}
		if ( $r['status'] >= 400 && $r['status'] < 500 && ! in_array( $r['status'], array( 401, 403 ), true ) ) {
			return new WP_Error( 'askwpd_rejected', self::daemon_message( $d, __( 'The assistant could not answer this request.', 'askwpd-companion' ) ), array( 'status' => $r['status'] ) );
		}
		// 401/403 mean the shim's token is wrong: the site owner's problem, not the visitor's.
		return new WP_Error( 'askwpd_bad_gateway', __( 'The assistant is unavailable right now.', 'askwpd-companion' ), array( 'status' => 502 ) );
	}

	/**
	 * The daemon's 429 (its cap on turns at once, or its daily budget of model calls) as
	 * the visitor should read it: array(message, seconds to wait), or null.
	 *
	 * @param array      $r A client result.
	 * @param array|null $d Its decoded body.
	 */
	public static function daemon_refusal( array $r, $d ): ?array {
		if ( 429 !== (int) $r['status'] ) {
			return null;
		}
		$code  = is_array( $d ) && isset( $d['error']['code'] ) ? (string) $d['error']['code'] : '';
		$retry = is_array( $d ) && isset( $d['error']['retry_after'] ) ? max( 1, (int) $d['error']['retry_after'] ) : 5;
		if ( 'budget_exhausted' === $code ) {
			return array( __( 'The assistant has answered all the questions it can for today. Please come back tomorrow.', 'askwpd-companion' ), $retry );
		}
		return array( __( 'The assistant is busy answering other visitors. Please try again in a few seconds.', 'askwpd-companion' ), $retry );
	}

	/**
	 * A 429 for the REST routes, with Retry-After.
	 *
	 * @param array $refusal array(message, seconds).
	 */
	private static function refusal_response( array $refusal ): WP_REST_Response {
		$res = rest_convert_error_to_response( new WP_Error( 'askwpd_busy', $refusal[0], array( 'status' => 429 ) ) );
		$res->header( 'Retry-After', (string) $refusal[1] );
		return $res;
	}

	/**
	 * Whether the daemon's answer is its no_provider error: no AI provider key is set.
	 *
	 * @param mixed $d A decoded body, {"error": {"code": ...}}.
	 */
	public static function no_provider( $d ): bool {
		return is_array( $d ) && is_array( $d['error'] ?? null ) && 'no_provider' === ( $d['error']['code'] ?? '' );
	}

	/**
	 * What the chat says when no AI provider key is configured: that, and where the site
	 * owner sets one (the Connectors screen exists from WordPress 7.0).
	 */
	public static function no_provider_message(): string {
		if ( function_exists( 'wp_get_connectors' ) ) {
			return __( 'The assistant is not set up yet: no AI provider key is configured. The site owner can add one under Settings → Connectors, in AskWP\'s settings, or in askwpd\'s configuration ([provider]).', 'askwpd-companion' );
		}
		return __( 'The assistant is not set up yet: no AI provider key is configured. The site owner can add one in AskWP\'s settings, or in askwpd\'s configuration ([provider]).', 'askwpd-companion' );
	}

	private static function daemon_message( $d, string $fallback ): string {
		if ( is_array( $d ) && isset( $d['error']['message'] ) && is_string( $d['error']['message'] ) ) {
			return $d['error']['message'];
		}
		return $fallback;
	}

	private static function chat_timeouts(): array {
		return array(
			'connect_ms' => (int) apply_filters( 'askwpd_chat_connect_ms', 1000 ),
			'timeout_ms' => (int) apply_filters( 'askwpd_chat_timeout_ms', 120000 ),
		);
	}

	/**
	 * The daemon's non-streaming chat.
	 *
	 * @param array $body Daemon request.
	 */
	private static function forward( array $body ): array {
		$t = self::chat_timeouts();
		return Askwpd_Client::request(
			'POST',
			'/v1/chat',
			(string) wp_json_encode( $body, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE ),
			array( 'Content-Type: application/json', 'Accept: application/json' ),
			$t
		);
	}
}
