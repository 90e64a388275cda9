<?php
/**
 * HTTP to the daemon on loopback.
 *
 * cURL directly rather than the WordPress HTTP API: that API rounds every timeout up to
 * one second, cannot stream a response, and WP_HTTP_BLOCK_EXTERNAL would refuse a daemon
 * on 127.0.0.1 whenever the site's own host is a public name. The WordPress API remains
 * the fallback where ext-curl is missing.
 *
 * The daemon's address may be unix:/path, its unix socket (CURLOPT_UNIX_SOCKET_PATH): cURL
 * then sends Host: localhost, which the daemon accepts as a loopback name.
 *
 * Plugin Check asks for the WordPress HTTP API instead of curl_*() (the sniff
 * WordPress.WP.AlternativeFunctions): the blocks that call cURL say so where they start,
 * for the reasons above.
 *
 * @package askwpd-companion
 */

if ( ! defined( 'ABSPATH' ) ) {
	exit;
}

final class Askwpd_Client {

	/**
	 * The URL cURL requests and the unix socket it goes through ('' over TCP).
	 *
	 * @param string $base The daemon's address: http://HOST:PORT or unix:/path.
	 */
	public static function target( string $base ): array {
		if ( 0 === strpos( $base, 'unix:' ) ) {
			return array( 'http://localhost', substr( $base, 5 ) );
		}
		return array( $base, '' );
	}

	/**
	 * One request, fully read.
	 *
	 * @param string      $method  GET or POST.
	 * @param string      $path    Path on the daemon, e.g. /v1/status.
	 * @param string|null $body    Request body.
	 * @param array       $headers Extra headers, "Name: value".
	 * @param array       $opt     connect_ms, timeout_ms, auth (bool, default true), url.
	 * @return array status (0 when no HTTP answer), body, error, errno, ms.
	 */
	public static function request( string $method, string $path, ?string $body = null, array $headers = array(), array $opt = array() ): array {
		$s          = Askwpd_Settings::get();
		list( $base, $socket ) = self::target( (string) ( $opt['url'] ?? $s['url'] ) );
		$url        = $base . $path;
		$connect_ms = (int) ( $opt['connect_ms'] ?? 500 );
		$timeout_ms = (int) ( $opt['timeout_ms'] ?? 2000 );
		if ( ( $opt['auth'] ?? true ) && '' !== $s['token'] ) {
			$headers[] = 'Authorization: Bearer ' . $s['token'];
		}
		$headers[] = 'User-Agent: askwpd-companion/' . ASKWPD_COMPANION_VERSION;
		$headers[] = 'Expect:'; // No 100-continue round trip on larger bodies.
		if ( is_multisite() ) {
			$headers[] = Askwpd_Network::header(); // which site's index answers
		}
		$t0        = microtime( true );

		if ( ! function_exists( 'curl_init' ) ) {
			if ( '' !== $socket ) {
				return array( 'status' => 0, 'body' => '', 'error' => 'a unix socket needs PHP\'s curl extension', 'errno' => -1, 'ms' => 0.0 );
			}
			return self::request_wp( $method, $url, $body, $headers, $timeout_ms, $t0 );
		}
		// phpcs:disable WordPress.WP.AlternativeFunctions -- a unix socket, millisecond timeouts, no proxy: see the file comment.
		$ch = curl_init( $url );
		curl_setopt_array(
			$ch,
			array(
				CURLOPT_CUSTOMREQUEST     => $method,
				CURLOPT_RETURNTRANSFER    => true,
				CURLOPT_HTTPHEADER        => $headers,
				CURLOPT_NOSIGNAL          => true, // Millisecond timeouts need it.
				CURLOPT_CONNECTTIMEOUT_MS => $connect_ms,
				CURLOPT_TIMEOUT_MS        => $timeout_ms,
				CURLOPT_FOLLOWLOCATION    => false,
				CURLOPT_PROXY             => '', // Loopback: never through a proxy from the environment.
				CURLOPT_NOPROXY           => '*',
			)
		);
		if ( '' !== $socket ) {
			curl_setopt( $ch, CURLOPT_UNIX_SOCKET_PATH, $socket );
		}
		if ( null !== $body ) {
			curl_setopt( $ch, CURLOPT_POSTFIELDS, $body );
		}
		$resp  = curl_exec( $ch );
		$errno = curl_errno( $ch );
		$out   = array(
			'status' => (int) curl_getinfo( $ch, CURLINFO_RESPONSE_CODE ),
			'body'   => is_string( $resp ) ? $resp : '',
			'error'  => $errno ? curl_error( $ch ) : '',
			'errno'  => $errno,
			'ms'     => ( microtime( true ) - $t0 ) * 1000,
			'location' => (string) curl_getinfo( $ch, CURLINFO_REDIRECT_URL ),
		);
		self::close( $ch );
		// phpcs:enable WordPress.WP.AlternativeFunctions
		return $out;
	}

	private static function request_wp( string $method, string $url, ?string $body, array $headers, int $timeout_ms, float $t0 ): array {
		$h = array();
		foreach ( $headers as $line ) {
			list( $k, $v ) = array_map( 'trim', explode( ':', $line, 2 ) );
			$h[ $k ]       = $v;
		}
		$r = wp_remote_request(
			$url,
			array(
				'method'  => $method,
				'headers' => $h,
				'body'    => $body,
				'timeout' => max( 1, $timeout_ms / 1000 ),
			)
		);
		if ( is_wp_error( $r ) ) {
			return array( 'status' => 0, 'body' => '', 'error' => $r->get_error_message(), 'errno' => -1, 'ms' => ( microtime( true ) - $t0 ) * 1000 );
		}
		return array(
			'status' => (int) wp_remote_retrieve_response_code( $r ),
			'body'   => (string) wp_remote_retrieve_body( $r ),
			'error'  => '',
			'errno'  => 0,
			'ms'     => ( microtime( true ) - $t0 ) * 1000,
		);
	}

	/**
	 * Decodes a JSON reply, or null.
	 *
	 * @param array $r A result of request().
	 */
	public static function json( array $r ): ?array {
		if ( '' === $r['body'] ) {
			return null;
		}
		$v = json_decode( $r['body'], true );
		return is_array( $v ) ? $v : null;
	}

	/**
	 * POSTs and hands the response to callbacks as it arrives, without buffering.
	 *
	 * $on_start(int $status, string $content_type) runs once, when the first body bytes of a
	 * response arrive; it returns false to refuse the body (it is then collected and
	 * returned, and nothing is emitted). $on_chunk(string $bytes) gets the body of an
	 * accepted response, and returns false to abort.
	 *
	 * @return array started (bool), status, body (refused body), error, errno.
	 */
	public static function stream( string $path, string $body, array $headers, callable $on_start, callable $on_chunk, array $opt = array() ): array {
		$s         = Askwpd_Settings::get();
		$headers[] = 'User-Agent: askwpd-companion/' . ASKWPD_COMPANION_VERSION;
		$headers[] = 'Expect:';
		if ( is_multisite() ) {
			$headers[] = Askwpd_Network::header();
		}
		if ( '' !== $s['token'] ) {
			$headers[] = 'Authorization: Bearer ' . $s['token'];
		}
		$state = array(
			'status'  => 0,
			'ctype'   => '',
			'decided' => false,
			'started' => false,
			'body'    => '',
		);
		list( $base, $socket ) = self::target( $s['url'] );
		// phpcs:disable WordPress.WP.AlternativeFunctions -- streaming from a unix socket or loopback: see the file comment.
		$ch    = curl_init( $base . $path );
		if ( '' !== $socket ) {
			curl_setopt( $ch, CURLOPT_UNIX_SOCKET_PATH, $socket );
		}
		curl_setopt_array(
			$ch,
			array(
				CURLOPT_POST              => true,
				CURLOPT_POSTFIELDS        => $body,
				CURLOPT_HTTPHEADER        => $headers,
				CURLOPT_NOSIGNAL          => true,
				CURLOPT_CONNECTTIMEOUT_MS => (int) ( $opt['connect_ms'] ?? 1000 ),
				CURLOPT_TIMEOUT_MS        => (int) ( $opt['timeout_ms'] ?? 180000 ),
				CURLOPT_PROXY             => '',
				CURLOPT_NOPROXY           => '*',
				CURLOPT_HEADERFUNCTION    => static function ( $ch, $line ) use ( &$state ) {
					if ( preg_match( '#^HTTP/\S+\s+(\d{3})#', $line, $m ) ) {
						$state['status'] = (int) $m[1];
					} elseif ( 0 === stripos( $line, 'content-type:' ) ) {
						$state['ctype'] = trim( substr( $line, 13 ) );
					}
					return strlen( $line );
				},
				CURLOPT_WRITEFUNCTION     => static function ( $ch, $data ) use ( &$state, $on_start, $on_chunk ) {
					if ( ! $state['decided'] ) {
						$state['decided'] = true;
						$state['started'] = false !== call_user_func( $on_start, $state['status'], $state['ctype'] );
					}
					if ( $state['started'] ) {
						if ( false === call_user_func( $on_chunk, $data ) ) {
							return 0; // The visitor left: stop the daemon's work too.
						}
					} elseif ( strlen( $state['body'] ) < 65536 ) {
						$state['body'] .= $data;
					}
					return strlen( $data );
				},
			)
		);
		curl_exec( $ch );
		$errno = curl_errno( $ch );
		$out   = array(
			'started' => $state['started'],
			'status'  => $state['status'],
			'body'    => $state['body'],
			'error'   => $errno ? curl_error( $ch ) : '',
			'errno'   => $errno,
		);
		self::close( $ch );
		// phpcs:enable WordPress.WP.AlternativeFunctions
		return $out;
	}

	/**
	 * Frees a cURL handle where PHP still needs it: before PHP 8.0 a handle is a resource
	 * that lives until curl_close(); since 8.0 it is an object freed with its last
	 * reference, curl_close() does nothing, and PHP 8.5 deprecates it.
	 *
	 * @param resource|CurlHandle $ch The handle.
	 */
	public static function close( $ch ): void {
		if ( PHP_VERSION_ID < 80000 ) {
			curl_close( $ch ); // phpcs:ignore WordPress.WP.AlternativeFunctions.curl_curl_close -- see request().
		}
	}
}
