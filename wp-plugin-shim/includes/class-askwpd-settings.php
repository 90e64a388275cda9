<?php
/**
 * Where the daemon is and how to talk to it.
 *
 * The cascade (ARCHITECTURE.md, "PHP shim settings"): constants in wp-config.php or an
 * mu-plugin, else the settings saved on Tools → AskWP Index, else defaults that read the
 * daemon's own state files, so a default install needs no typing.
 *
 * The daemon's address is http://HOST:PORT, or unix:/path for its unix socket. With none
 * given, the shim takes the Debian package's socket when it is there, else the daemon's
 * default TCP address.
 *
 * @package askwpd-companion
 */

if ( ! defined( 'ABSPATH' ) ) {
	exit;
}

final class Askwpd_Settings {

	const OPTION            = 'askwpd_companion_settings';
	const GROUP             = 'askwpd_companion';
	const DEFAULT_URL       = 'http://127.0.0.1:8787';
	const DEFAULT_SOCKET    = '/run/askwpd/askwpd.sock';
	const DEFAULT_STATE_DIR = '/var/lib/askwpd';
	const FILES             = array(
		'token'  => 'token',
		'secret' => 'webhook.secret',
	);

	/** @var array|null Resolved once per request. */
	private static $cache = null;

	public static function init(): void {
		add_action( 'init', array( __CLASS__, 'register' ) );
	}

	/**
	 * Registers the option with the Settings API, so that options.php saves it through
	 * sanitize() and checks the nonce and capability.
	 */
	public static function register(): void {
		if ( isset( get_registered_settings()[ self::OPTION ] ) ) {
			return;
		}
		register_setting(
			self::GROUP,
			self::OPTION,
			array(
				'type'              => 'object',
				'description'       => __( 'Where the askwpd daemon listens, and the secrets the site shares with it.', 'askwpd-companion' ),
				'sanitize_callback' => array( __CLASS__, 'sanitize' ),
				'show_in_rest'      => false,
			)
		);
	}

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
	 * @param callable|null $socket Tells whether a unix socket is there: fn(string $path): bool
	 *                              (default: is_socket()).
	 */
	public static function resolve( array $consts, array $opts, callable $read, ?callable $socket = null ): array {
		$socket      = $socket ?? array( __CLASS__, 'is_socket' );
		$default_url = call_user_func( $socket, self::DEFAULT_SOCKET ) ? 'unix:' . self::DEFAULT_SOCKET : self::DEFAULT_URL;
		$pick = static function ( $const, $opt, $default ) use ( $consts, $opts ) {
			if ( isset( $consts[ $const ] ) && '' !== $consts[ $const ] ) {
				return array( $consts[ $const ], 'constant' );
			}
			if ( isset( $opts[ $opt ] ) && '' !== trim( (string) $opts[ $opt ] ) ) {
				return array( trim( (string) $opts[ $opt ] ), 'option' );
			}
			return array( $default, '' === $default ? 'none' : 'default' );
		};

		list( $url, $url_src )     = $pick( 'ASKWPD_URL', 'url', $default_url );
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

	/** True when a unix socket is at $path (and this process may see it). */
	public static function is_socket( string $path ): bool {
		return 'socket' === @filetype( $path ); // phpcs:ignore WordPress.PHP.NoSilencedErrors -- open_basedir and a missing file warn.
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
	 * Sanitizes the option. From the settings form (marked by its "form" field), blank
	 * secret fields keep the saved value, so the page never has to print a secret back
	 * into a form, and clear_token and clear_secret empty them. Any other update_option()
	 * stores the values it is given. WordPress sanitizes twice on the first save
	 * (update_option, then add_option); the second run gets the first's output, which
	 * has no form mark, and keeps it as it is.
	 *
	 * @param mixed $in Unslashed input.
	 */
	public static function sanitize( $in ): array {
		$in   = is_array( $in ) ? $in : array();
		$form = ! empty( $in['form'] );
		$old  = $form ? get_option( self::OPTION, array() ) : array();
		$old  = is_array( $old ) ? $old : array();
		$new  = array(
			'url'       => isset( $in['url'] ) ? self::sanitize_url( (string) $in['url'] ) : '',
			'state_dir' => isset( $in['state_dir'] ) ? sanitize_text_field( (string) $in['state_dir'] ) : '',
			'token'     => (string) ( $old['token'] ?? '' ),
			'secret'    => (string) ( $old['secret'] ?? '' ),
		);
		foreach ( array( 'token', 'secret' ) as $k ) {
			if ( ! empty( $in[ 'clear_' . $k ] ) ) {
				$new[ $k ] = '';
			} elseif ( isset( $in[ $k ] ) && ( ! $form || '' !== trim( (string) $in[ $k ] ) ) ) {
				$new[ $k ] = preg_replace( '/[^\x21-\x7e]/', '', (string) $in[ $k ] );
			}
		}
		return $new;
	}

	/**
	 * An http(s) address, or unix:/absolute/path for the daemon's socket; '' for anything else.
	 *
	 * @param string $url Typed address.
	 */
	public static function sanitize_url( string $url ): string {
		$url = trim( $url );
		if ( preg_match( '#^unix:(/[A-Za-z0-9._/@+-]+)$#', $url, $m ) && false === strpos( $m[1], '/../' ) ) {
			return $url;
		}
		return esc_url_raw( $url, array( 'http', 'https' ) );
	}

	/**
	 * Saves settings the way the settings page does.
	 *
	 * @param array $in Unslashed form input.
	 */
	public static function save( array $in ): void {
		self::register();
		update_option( self::OPTION, array( 'form' => 1 ) + $in, false );
		self::reset();
	}

	/**
	 * What keeps the shim from the secrets it reads in the state dir, one entry per
	 * secret that has no other source: file, problem (missing_dir, unreadable_dir,
	 * missing, unreadable, empty), message and fix, both translated.
	 *
	 * @param array|null    $s     Resolved settings (default: get()).
	 * @param callable|null $probe fn(string $path): string, the problem or 'ok' (default: probe()).
	 */
	public static function secret_problems( ?array $s = null, ?callable $probe = null ): array {
		$s     = $s ?? self::get();
		$probe = $probe ?? array( __CLASS__, 'probe' );
		$dir   = $s['state_dir'];
		$out   = array();
		foreach ( self::FILES as $key => $file ) {
			if ( '' !== (string) $s[ $key ] ) {
				continue;
			}
			$path    = $dir . '/' . $file;
			$problem = (string) call_user_func( $probe, $path );
			if ( 'ok' === $problem ) {
				continue;
			}
			// A problem with the directory is one problem, however many files are in it.
			if ( in_array( $problem, array( 'missing_dir', 'unreadable_dir' ), true ) && in_array( $problem, array_column( $out, 'problem' ), true ) ) {
				continue;
			}
			$out[] = array(
				'file'    => $path,
				'problem' => $problem,
				'message' => self::problem_message( $problem, $path, $dir ),
				'fix'     => self::problem_fix( $problem, $dir ),
			);
		}
		return $out;
	}

	/**
	 * Why a state file cannot be read, as seen by this PHP process.
	 *
	 * @param string $path A file in the state dir.
	 * @return string ok, missing_dir, unreadable_dir, missing, unreadable or empty.
	 */
	public static function probe( string $path ): string {
		// phpcs:disable WordPress.PHP.NoSilencedErrors -- open_basedir warns.
		$dir = dirname( $path );
		if ( ! @is_dir( $dir ) ) {
			return 'missing_dir';
		}
		if ( ! @is_readable( $dir ) ) {
			return 'unreadable_dir';
		}
		if ( ! @file_exists( $path ) ) {
			return 'missing';
		}
		if ( ! @is_readable( $path ) ) {
			return 'unreadable';
		}
		// phpcs:enable
		return '' === self::read_secret_file( $path ) ? 'empty' : 'ok';
	}

	/** The web server's group, which must be able to read the state dir. */
	public static function web_group(): string {
		if ( function_exists( 'posix_getegid' ) && function_exists( 'posix_getgrgid' ) ) {
			$g = posix_getgrgid( posix_getegid() );
			if ( is_array( $g ) && ! empty( $g['name'] ) && 'root' !== $g['name'] ) {
				return (string) $g['name'];
			}
		}
		return 'www-data';
	}

	/**
	 * The shell commands that let the web server read the state dir, as the daemon
	 * means it to: 0750 on the dir, 0640 on the secrets, group of the web server.
	 *
	 * @param string $dir The state dir.
	 */
	public static function permission_fix( string $dir ): string {
		$token  = $dir . '/' . self::FILES['token'];
		$secret = $dir . '/' . self::FILES['secret'];
		return sprintf(
			'sudo chgrp %1$s %2$s %3$s %4$s && sudo chmod 0750 %2$s && sudo chmod 0640 %3$s %4$s',
			self::web_group(),
			$dir,
			$token,
			$secret
		);
	}

	private static function problem_message( string $problem, string $path, string $dir ): string {
		switch ( $problem ) {
			case 'missing_dir':
				/* translators: %s: a directory, e.g. /var/lib/askwpd */
				return sprintf( __( 'askwpd\'s state directory %s does not exist on this server.', 'askwpd-companion' ), $dir );
			case 'unreadable_dir':
			case 'unreadable':
				/* translators: %s: a file, e.g. /var/lib/askwpd/token */
				return sprintf( __( 'askwpd cannot read %s: the web server is not allowed to.', 'askwpd-companion' ), $path );
			case 'missing':
				/* translators: %s: a file, e.g. /var/lib/askwpd/token */
				return sprintf( __( '%s does not exist yet.', 'askwpd-companion' ), $path );
			default:
				/* translators: %s: a file, e.g. /var/lib/askwpd/token */
				return sprintf( __( '%s is empty.', 'askwpd-companion' ), $path );
		}
	}

	private static function problem_fix( string $problem, string $dir ): string {
		switch ( $problem ) {
			case 'missing_dir':
				return __( 'Install and start askwpd, which creates it; or, if askwpd keeps its state elsewhere, define ASKWPD_STATE_DIR in wp-config.php (in Docker, mount askwpd\'s state volume into the web container there).', 'askwpd-companion' );
			case 'unreadable_dir':
			case 'unreadable':
				/* translators: %s: shell commands */
				return sprintf( __( 'Run %s', 'askwpd-companion' ), self::permission_fix( $dir ) );
			case 'missing':
				return __( 'Start askwpd ("sudo systemctl start askwpd"): it creates its token and webhook.secret on first start.', 'askwpd-companion' );
			default:
				return __( 'Delete the empty file and restart askwpd, which writes a new one.', 'askwpd-companion' );
		}
	}
}
