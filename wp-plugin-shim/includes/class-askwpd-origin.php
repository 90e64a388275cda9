<?php
/**
 * The origin proof: askwpd finds the web server on this host that serves the site (rather
 * than a CDN or page cache in front of it) by asking candidates for
 * GET /?askwpd_origin=NONCE with the site's Host header. Only this plugin knows the
 * webhook secret it shares with the daemon, so its answer, HMAC-SHA256(nonce, secret),
 * proves the address reaches this WordPress. A Site Health test reports what the daemon
 * found.
 *
 * @package askwpd-companion
 */

if ( ! defined( 'ABSPATH' ) ) {
	exit;
}

final class Askwpd_Origin {

	const PARAM = 'askwpd_origin';

	public static function init(): void {
		// As early as a plugin can: before the theme, redirects or a page cache plugin's
		// output buffer see the request.
		self::maybe_answer();
		add_filter( 'site_status_tests', array( __CLASS__, 'tests' ) );
	}

	/** Answers a proof request and exits; anything else passes through untouched. */
	public static function maybe_answer(): void {
		if ( ! isset( $_GET[ self::PARAM ] ) ) { // phpcs:ignore WordPress.Security.NonceVerification -- the nonce is the daemon's, answered with an HMAC.
			return;
		}
		$nonce = (string) wp_unslash( $_GET[ self::PARAM ] ); // phpcs:ignore WordPress.Security.NonceVerification,WordPress.Security.ValidatedSanitizedInput.InputNotSanitized
		$proof = self::proof( $nonce, (string) ( Askwpd_Settings::get()['secret'] ?? '' ) );
		if ( '' === $proof ) {
			return;
		}
		nocache_headers();
		header( 'Content-Type: text/plain; charset=utf-8' );
		header( 'X-Robots-Tag: noindex' );
		echo $proof; // phpcs:ignore WordPress.Security.EscapeOutput.OutputNotEscaped -- hex digits.
		exit;
	}

	/**
	 * The proof for a nonce: '' for a nonce that is not 16 to 64 hex digits or without a
	 * secret, so the query argument cannot be made to sign anything else.
	 *
	 * @param string $nonce  The daemon's nonce.
	 * @param string $secret The webhook secret.
	 */
	public static function proof( string $nonce, string $secret ): string {
		if ( '' === $secret || ! preg_match( '/^[0-9a-f]{16,64}\z/', $nonce ) ) {
			return '';
		}
		return hash_hmac( 'sha256', $nonce, $secret );
	}

	/**
	 * Adds the direct test.
	 *
	 * @param array $tests Site Health tests.
	 */
	public static function tests( $tests ) {
		if ( is_array( $tests ) ) {
			$tests['direct']['askwpd_origin'] = array(
				'label' => __( 'askwpd reads pages from this server', 'askwpd-companion' ),
				'test'  => array( __CLASS__, 'test_origin' ),
			);
		}
		return $tests;
	}

	/**
	 * What the daemon's status says of the address it fetches pages from.
	 *
	 * @param array|null $status The daemon's /v1/status (null: ask it).
	 */
	public static function test_origin( ?array $status = null ): array {
		if ( null === $status ) {
			$st     = Askwpd_Admin::daemon_state();
			$status = is_array( $st['status'] ) ? $st['status'] : null;
		}
		$o      = is_array( $status['origin'] ?? null ) ? $status['origin'] : null;
		$result = array(
			'label'       => __( 'askwpd reads pages from this server', 'askwpd-companion' ),
			'status'      => 'good',
			'badge'       => array(
				'label' => __( 'AskWP Index', 'askwpd-companion' ),
				'color' => 'blue',
			),
			'description' => '',
			'test'        => 'askwpd_origin',
		);
		if ( null === $o ) {
			$result['status']      = 'recommended';
			$result['badge']['color'] = 'orange';
			$result['label']       = __( 'It is not known where askwpd reads pages from', 'askwpd-companion' );
			$result['description'] = '<p>' . esc_html__( 'The askwpd daemon did not report its origin; see the test "The askwpd daemon answers".', 'askwpd-companion' ) . '</p>';
			return $result;
		}
		if ( ! empty( $o['warning'] ) ) {
			$result['status']         = 'recommended';
			$result['badge']['color'] = 'orange';
			$result['label']          = __( 'askwpd may read pages through a CDN or page cache', 'askwpd-companion' );
			$result['description']    = '<p>' . esc_html( (string) $o['warning'] ) . '</p><p><strong>' . esc_html__( 'Fix:', 'askwpd-companion' ) . '</strong> '
				. esc_html__( 'Set origin = "http://127.0.0.1:PORT" in /etc/askwpd/askwpd.toml to the web server that runs WordPress on this host.', 'askwpd-companion' ) . '</p>';
			return $result;
		}
		$result['description'] = '<p>' . esc_html(
			sprintf(
				/* translators: %s: host:port */
				__( 'askwpd fetches pages from %s, which proved it serves this site: no CDN or edge cache sits in between, and page caches are bypassed.', 'askwpd-companion' ),
				'' !== (string) ( $o['address'] ?? '' ) ? (string) $o['address'] : __( 'the site\'s own address on this host', 'askwpd-companion' )
			)
		) . '</p>';
		return $result;
	}
}
