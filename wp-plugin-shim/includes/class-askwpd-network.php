<?php
/**
 * Multisite: tells the daemon which site of a network a request comes from, and when
 * the network's sites change.
 *
 * Every request to the daemon carries the current blog id (X-AskWP-Blog-Id), so tool
 * calls, chat and post events answer from and go to that site's own index. Sites that
 * are created, archived, spammed, deleted or restored, and sites whose admin opts out
 * (Settings > Reading), send a site_changed event: the daemon then reads the network's
 * blogs table again, indexing a new site by itself and dropping one that left.
 *
 * @package askwpd-companion
 */

if ( ! defined( 'ABSPATH' ) ) {
	exit;
}

final class Askwpd_Network {

	/** The site option that keeps a site out of askwpd; the daemon reads it too. */
	const OPT_OUT = 'askwpd_exclude';
	const HEADER  = 'X-AskWP-Blog-Id';

	/** @var bool Whether on_switch() is itself switching back, so its own switches pass. */
	private static $flushing = false;

	/** @var array blog id => true, sites whose state changed in this request. */
	private static $changed = array();

	public static function init(): void {
		if ( ! is_multisite() ) {
			return;
		}
		// After core and other plugins have built the site's tables and options.
		add_action( 'wp_initialize_site', array( __CLASS__, 'on_site' ), 100, 1 );
		add_action( 'wp_uninitialize_site', array( __CLASS__, 'on_site' ), 100, 1 );
		foreach ( array( 'archive_blog', 'unarchive_blog', 'make_spam_blog', 'make_ham_blog', 'make_delete_blog', 'make_undelete_blog', 'deactivate_blog', 'activate_blog' ) as $hook ) {
			add_action( $hook, array( __CLASS__, 'on_site' ), 100, 1 );
		}
		foreach ( array( 'add_option_', 'update_option_', 'delete_option_' ) as $hook ) {
			add_action( $hook . self::OPT_OUT, array( __CLASS__, 'on_opt_out' ), 10, 0 );
		}
		add_action( 'switch_blog', array( __CLASS__, 'on_switch' ), 1, 2 );
		add_action( 'shutdown', array( __CLASS__, 'flush' ), 20 );
		add_action( 'admin_init', array( __CLASS__, 'register_setting' ) );
	}

	/** The header line for the daemon, or '' outside a network. */
	public static function header(): string {
		return is_multisite() ? self::HEADER . ': ' . get_current_blog_id() : '';
	}

	/** @param WP_Site|int $site */
	public static function on_site( $site ): void {
		$id = is_object( $site ) ? (int) $site->blog_id : (int) $site;
		if ( $id > 0 ) {
			self::$changed[ $id ] = true;
		}
	}

	public static function on_opt_out(): void {
		self::$changed[ get_current_blog_id() ] = true;
	}

	/**
	 * Post events queued on one site leave before switch_to_blog() moves to another, under
	 * the blog id they were queued on: a script publishing on site 3 from the main site
	 * sends them as site 3's. switch_blog fires once the switch is made, so the flush runs
	 * back on the site the events came from: an event the daemon does not take waits in
	 * that site's own outbox, and is not written into the next site's tables (which, while
	 * wp_initialize_site builds a new site, do not exist yet).
	 */
	public static function on_switch( $new_blog, $prev_blog ): void {
		if ( self::$flushing || (int) $new_blog === (int) $prev_blog || ! Askwpd_Webhooks::pending() ) {
			return;
		}
		self::$flushing = true;
		switch_to_blog( (int) $prev_blog );
		try {
			Askwpd_Webhooks::flush();
		} finally {
			restore_current_blog();
			self::$flushing = false;
		}
	}

	/** Sends the site changes of this request as one signed batch. */
	public static function flush(): ?array {
		if ( ! self::$changed ) {
			return null;
		}
		$events = array();
		foreach ( array_keys( self::$changed ) as $id ) {
			$events[] = array(
				'id'      => wp_generate_uuid4(),
				'type'    => 'site_changed',
				'blog_id' => $id,
			);
		}
		self::$changed = array();
		$s             = Askwpd_Settings::get();
		if ( '' === $s['secret'] ) {
			return null;
		}
		$body = wp_json_encode( array( 'events' => $events ), JSON_UNESCAPED_SLASHES );
		$ts   = (string) time();
		return Askwpd_Client::request(
			'POST',
			'/v1/events',
			$body,
			array(
				'Content-Type: application/json',
				'X-Askwpd-Timestamp: ' . $ts,
				'X-Askwpd-Signature: ' . Askwpd_Webhooks::sign( $body, $ts, $s['secret'] ),
			),
			array(
				'auth'       => false,
				'connect_ms' => 250,
				'timeout_ms' => 2000,
			)
		);
	}

	/** The opt-out, under Settings > Reading beside search engine visibility. */
	public static function register_setting(): void {
		register_setting(
			'reading',
			self::OPT_OUT,
			array(
				'type'              => 'string',
				'sanitize_callback' => static function ( $v ) {
					return $v ? '1' : '';
				},
				'default'           => '',
			)
		);
		add_settings_field(
			self::OPT_OUT,
			__( 'AskWP index', 'askwpd-companion' ),
			array( __CLASS__, 'render_field' ),
			'reading'
		);
	}

	public static function render_field(): void {
		printf(
			'<label><input type="checkbox" name="%1$s" value="1" %2$s /> %3$s</label><p class="description">%4$s</p>',
			esc_attr( self::OPT_OUT ),
			checked( '1', get_option( self::OPT_OUT ), false ),
			esc_html__( 'Keep this site out of askwpd', 'askwpd-companion' ),
			esc_html__( 'askwpd then removes the site\'s pages from its index and its chat answers nothing from them.', 'askwpd-companion' )
		);
	}
}
