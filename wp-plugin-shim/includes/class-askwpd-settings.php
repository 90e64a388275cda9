<?php
/**
 * Where the daemon is and how to talk to it.
 *
 * The cascade (ARCHITECTURE.md, "PHP shim settings"): constants in wp-config.php or an
 * mu-plugin, else the settings saved on Tools → AskWP Index, else defaults that read the
 * daemon's own state files, so a default install needs no typing.
 *
 * @package askwpd-companion
 */

if ( ! defined( 'ABSPATH' ) ) {
	exit;
}

final class Askwpd_Settings {

	const OPTION            = 'askwpd_companion_settings';
	const DEFAULT_URL       = 'http://127.0.0.1:8787';
	const DEFAULT_STATE_DIR = '/var/lib/askwpd';

	/** @var array|null Resolved once per request. */
	private static $cache = null;

	/**
	 * The effective settings: url, state_dir, token, secret, and where each came from
	 * (in 'source': constant, option, state_file, default or none).
	 */
	public static function get(): array {
		if ( null === self::$cache ) {
			$consts = array();
			foreach ( array( 'ASKWPD_URL', 'ASKWPD_STATE_DIR', 'ASKWPD_TOKEN', 'ASKWPD_WEBHOOK_SECRET' ) as $name ) {
				if ( defined( $name ) ) {
					$consts[ $name ] = (string) constant( $name );
				}
			}
			$opts = get_option( self::OPTION, array() );
			$s    = self::resolve( $consts, is_array( $opts ) ? $opts : array(), array( __CLASS__, 'read_secret_file' ) );
			/**
			 * Filters the resolved daemon settings (url, state_dir, token, secret, source).
			 *
			 * @param array $s Settings.
			 */
			self::$cache = apply_filters( 'askwpd_settings', $s );
		}
		return self::$cache;
	}

	/** Forgets the resolved settings, after a save or a filter change. */
	public static function reset(): void {
		self::$cache = null;
	}

	/**
	 * The cascade as a pure function of its inputs.
	 *
	 * A state dir given as a constant beats a token typed on the settings page, since a
	 * constant is the stronger statement of where the daemon lives.
	 *
	 * @param array    $consts Defined constants by name.
	 * @param array    $opts   The saved option (url, state_dir, token, secret).
	 * @param callable $read   Reads a secret file: fn(string $path): string ('' when unreadable).
	 */
	public static function resolve( array $consts, array $opts, callable $read ): array {
		$pick = static function ( $const, $opt, $default ) use ( $consts, $opts ) {
			if ( isset( $consts[ $const ] ) && '' !== $consts[ $const ] ) {
				return array( $consts[ $const ], 'constant' );
			}
			if ( isset( $opts[ $opt ] ) && '' !== trim( (string) $opts[ $opt ] ) ) {
				return array( trim( (string) $opts[ $opt ] ), 'option' );
			}
			return array( $default, '' === $default ? 'none' : 'default' );
		};

		list( $url, $url_src )     = $pick( 'ASKWPD_URL', 'url', self::DEFAULT_URL );
		list( $dir, $dir_src )     = $pick( 'ASKWPD_STATE_DIR', 'state_dir', self::DEFAULT_STATE_DIR );
		list( $token, $tok_src )   = $pick( 'ASKWPD_TOKEN', 'token', '' );
		list( $secret, $sec_src )  = $pick( 'ASKWPD_WEBHOOK_SECRET', 'secret', '' );
		$dir                       = rtrim( $dir, '/' );

		$from_file = static function ( $value, $src, $file ) use ( $read, $dir, $dir_src ) {
			if ( 'constant' === $src || ( 'option' === $src && 'constant' !== $dir_src ) ) {
				return array( $value, $src );
			}
			$v = trim( (string) call_user_func( $read, $dir . '/' . $file ) );
			if ( '' !== $v ) {
				return array( $v, 'state_file' );
			}
			return array( $value, $src );
		};
		list( $token, $tok_src )  = $from_file( $token, $tok_src, 'token' );
		list( $secret, $sec_src ) = $from_file( $secret, $sec_src, 'webhook.secret' );

		return array(
			'url'       => rtrim( $url, '/' ),
			'state_dir' => $dir,
			'token'     => $token,
			'secret'    => $secret,
			'source'    => array(
				'url'       => $url_src,
				'state_dir' => $dir_src,
				'token'     => $tok_src,
				'secret'    => $sec_src,
			),
		);
	}

	/** Reads a small secret file, or '' when it is missing or unreadable. */
	public static function read_secret_file( string $path ): string {
		if ( ! @is_file( $path ) || ! @is_readable( $path ) ) { // phpcs:ignore WordPress.PHP.NoSilencedErrors -- open_basedir warns.
			return '';
		}
		$v = @file_get_contents( $path, false, null, 0, 4096 ); // phpcs:ignore WordPress.PHP.NoSilencedErrors
		return false === $v ? '' : trim( $v );
	}

	/**
	 * Saves the settings page values. Blank secret fields keep the saved value, so the
	 * page never has to print a secret back into a form.
	 *
	 * @param array $in Unslashed form input.
	 */
	public static function save( array $in ): void {
		$old = get_option( self::OPTION, array() );
		$old = is_array( $old ) ? $old : array();
		$new = array(
			'url'       => isset( $in['url'] ) ? esc_url_raw( trim( (string) $in['url'] ), array( 'http', 'https' ) ) : '',
			'state_dir' => isset( $in['state_dir'] ) ? sanitize_text_field( (string) $in['state_dir'] ) : '',
			'token'     => $old['token'] ?? '',
			'secret'    => $old['secret'] ?? '',
		);
		foreach ( array( 'token', 'secret' ) as $k ) {
			if ( ! empty( $in[ 'clear_' . $k ] ) ) {
				$new[ $k ] = '';
			} elseif ( isset( $in[ $k ] ) && '' !== trim( (string) $in[ $k ] ) ) {
				$new[ $k ] = preg_replace( '/[^\x21-\x7e]/', '', (string) $in[ $k ] );
			}
		}
		update_option( self::OPTION, $new, false );
		self::reset();
	}
}
