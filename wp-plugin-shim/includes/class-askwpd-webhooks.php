<?php
/**
 * Change webhooks: the sync hook set proven by ElasticPress, queued per request,
 * deduplicated by post ID, and sent once at the end as one signed batch.
 *
 * What a post's event says is decided at flush time from the post's final state, not
 * from the hook that queued it: a post published and then privatized in one request
 * leaves as "not public", and nothing of a non-public post leaves but its ID.
 *
 * @package askwpd-companion
 */

if ( ! defined( 'ABSPATH' ) ) {
	exit;
}

final class Askwpd_Webhooks {

	const DELIVERY_OPTION = 'askwpd_companion_delivery';
	const BATCH           = 100;

	/** @var array key => pending item. Posts are keyed by ID, everything else by a name. */
	private static $queue = array();

	/** @var array post ID => post type, for posts deleted in this request. */
	private static $deleted = array();

	/** @var bool Whether this request sent events (and so tried the outbox too). */
	private static $sent = false;

	public static function init(): void {
		add_action( 'transition_post_status', array( __CLASS__, 'on_transition' ), 10, 3 );
		add_action( 'save_post', array( __CLASS__, 'on_save' ), 10, 2 );
		add_action( 'before_delete_post', array( __CLASS__, 'on_before_delete' ), 10, 1 );
		add_action( 'deleted_post', array( __CLASS__, 'on_deleted' ), 10, 1 );
		add_action( 'trashed_post', array( __CLASS__, 'on_post_changed' ), 10, 1 );
		add_action( 'untrashed_post', array( __CLASS__, 'on_post_changed' ), 10, 1 );
		add_action( 'added_post_meta', array( __CLASS__, 'on_meta' ), 10, 3 );
		add_action( 'updated_post_meta', array( __CLASS__, 'on_meta' ), 10, 3 );
		add_action( 'deleted_post_meta', array( __CLASS__, 'on_meta' ), 10, 3 );
		add_action( 'set_object_terms', array( __CLASS__, 'on_set_object_terms' ), 10, 6 );
		add_action( 'edited_term', array( __CLASS__, 'on_edited_term' ), 10, 3 );
		add_action( 'delete_term', array( __CLASS__, 'on_delete_term' ), 10, 5 );
		add_action( 'wp_update_nav_menu', array( __CLASS__, 'on_menu' ), 10, 0 );
		add_action( 'wp_delete_nav_menu', array( __CLASS__, 'on_menu' ), 10, 0 );
		add_action( 'switch_theme', array( __CLASS__, 'on_theme' ), 10, 0 );
		foreach ( array( 'permalink_structure', 'category_base', 'tag_base' ) as $opt ) {
			add_action( 'update_option_' . $opt, array( __CLASS__, 'on_permalinks' ), 10, 0 );
		}
		add_action( 'shutdown', array( __CLASS__, 'flush' ), 100, 0 );
		// As ElasticPress does: send before a redirect, whose exit may come before our turn.
		add_filter( 'wp_redirect', array( __CLASS__, 'flush_before_redirect' ), PHP_INT_MAX, 1 );
	}

	// --- hooks ----------------------------------------------------------------------

	public static function on_transition( $new_status, $old_status, $post ): void {
		if ( ! $post instanceof WP_Post || $new_status === $old_status && 'publish' !== $new_status ) {
			return;
		}
		$reason = ( 'publish' === $new_status && 'publish' !== $old_status ) ? 'published' : 'updated';
		self::queue_post( (int) $post->ID, $reason, $post );
	}

	public static function on_save( $post_id, $post = null ): void {
		self::queue_post( (int) $post_id, 'updated', $post instanceof WP_Post ? $post : null );
	}

	public static function on_post_changed( $post_id ): void {
		self::queue_post( (int) $post_id, 'updated' );
	}

	public static function on_before_delete( $post_id ): void {
		$post = get_post( $post_id );
		if ( $post && self::watched( $post ) ) {
			self::$deleted[ (int) $post_id ] = $post->post_type;
		}
	}

	public static function on_deleted( $post_id ): void {
		$post_id = (int) $post_id;
		if ( isset( self::$deleted[ $post_id ] ) ) {
			self::$queue[ 'post:' . $post_id ] = array(
				'kind'      => 'post',
				'post_id'   => $post_id,
				'reason'    => 'deleted',
				'post_type' => self::$deleted[ $post_id ],
			);
		}
	}

	public static function on_meta( $meta_ids, $object_id, $meta_key ): void {
		if ( in_array( $meta_key, self::meta_allow_list(), true ) ) {
			self::queue_post( (int) $object_id, 'updated' );
		}
	}

	public static function on_set_object_terms( $object_id, $terms, $tt_ids, $taxonomy, $append, $old_tt_ids ): void {
		$a = array_map( 'intval', (array) $tt_ids );
		$b = array_map( 'intval', (array) $old_tt_ids );
		sort( $a );
		sort( $b );
		if ( $a !== $b ) {
			self::queue_post( (int) $object_id, 'updated' );
		}
	}

	public static function on_edited_term( $term_id, $tt_id, $taxonomy ): void {
		if ( 'nav_menu' === $taxonomy ) {
			self::on_menu();
			return;
		}
		if ( ! taxonomy_exists( $taxonomy ) || ! is_taxonomy_viewable( $taxonomy ) ) {
			return;
		}
		$ids = get_objects_in_term( (int) $term_id, $taxonomy );
		self::queue_term( (int) $term_id, $taxonomy, is_array( $ids ) ? $ids : array() );
	}

	public static function on_delete_term( $term, $tt_id, $taxonomy, $deleted_term = null, $object_ids = array() ): void {
		if ( 'nav_menu' === $taxonomy ) {
			self::on_menu();
			return;
		}
		if ( taxonomy_exists( $taxonomy ) && ! is_taxonomy_viewable( $taxonomy ) ) {
			return;
		}
		self::queue_term( (int) $term, $taxonomy, (array) $object_ids );
	}

	public static function on_menu(): void {
		self::$queue['menu'] = array( 'kind' => 'site', 'type' => 'menu_changed' );
	}

	public static function on_theme(): void {
		self::$queue['theme'] = array( 'kind' => 'site', 'type' => 'theme_changed' );
	}

	public static function on_permalinks(): void {
		self::$queue['permalinks'] = array( 'kind' => 'site', 'type' => 'permalinks_changed' );
	}

	/**
	 * Returns $location unchanged, after sending what is queued.
	 *
	 * @param string $location Redirect target.
	 */
	public static function flush_before_redirect( $location ) {
		self::flush();
		return $location;
	}

	// --- queue ----------------------------------------------------------------------

	/** Meta keys whose change alters what a page shows or how it is indexed. */
	public static function meta_allow_list(): array {
		/**
		 * Filters the post meta keys whose changes send a webhook.
		 *
		 * @param string[] $keys Meta keys.
		 */
		return (array) apply_filters(
			'askwpd_meta_allow_list',
			array(
				'_thumbnail_id',
				'_wp_page_template',
				'_yoast_wpseo_title',
				'_yoast_wpseo_metadesc',
				'_yoast_wpseo_canonical',
				'_yoast_wpseo_meta-robots-noindex',
				'rank_math_title',
				'rank_math_description',
				'rank_math_robots',
				'rank_math_canonical_url',
				'_aioseo_title',
				'_aioseo_description',
			)
		);
	}

	/** Whether changes to this post concern the index at all. */
	private static function watched( WP_Post $post ): bool {
		if ( 'auto-draft' === $post->post_status || wp_is_post_revision( $post ) || wp_is_post_autosave( $post ) ) {
			return false;
		}
		if ( in_array( $post->post_type, array( 'attachment', 'nav_menu_item', 'revision' ), true ) ) {
			return false;
		}
		return (bool) apply_filters( 'askwpd_watch_post', is_post_type_viewable( $post->post_type ), $post );
	}

	/**
	 * Queues a post; the strongest reason wins (deleted > published > updated).
	 *
	 * @param int          $post_id Post ID.
	 * @param string       $reason  published or updated.
	 * @param WP_Post|null $post    The post, when the hook has it.
	 */
	public static function queue_post( int $post_id, string $reason, ?WP_Post $post = null ): void {
		if ( $post_id <= 0 ) {
			return;
		}
		$post = $post ? $post : get_post( $post_id );
		if ( ! $post || ! self::watched( $post ) ) {
			return;
		}
		$key  = 'post:' . $post_id;
		$rank = array(
			'updated'   => 1,
			'published' => 2,
			'deleted'   => 3,
		);
		if ( isset( self::$queue[ $key ] ) && $rank[ self::$queue[ $key ]['reason'] ] >= $rank[ $reason ] ) {
			return;
		}
		self::$queue[ $key ] = array(
			'kind'      => 'post',
			'post_id'   => $post_id,
			'reason'    => $reason,
			'post_type' => $post->post_type,
		);
	}

	private static function queue_term( int $term_id, string $taxonomy, array $post_ids ): void {
		$key = 'term:' . $taxonomy . ':' . $term_id;
		$ids = isset( self::$queue[ $key ] ) ? self::$queue[ $key ]['post_ids'] : array();
		$ids = array_slice( array_values( array_unique( array_merge( $ids, array_map( 'intval', $post_ids ) ) ) ), 0, 1000 );

		self::$queue[ $key ] = array(
			'kind'     => 'term',
			'term_id'  => $term_id,
			'taxonomy' => $taxonomy,
			'post_ids' => $ids,
		);
	}

	/** What is queued, for tests and for the admin page. */
	public static function pending(): array {
		return self::$queue;
	}

	/** Drops what is queued, unsent (tests). */
	public static function clear(): void {
		self::$queue   = array();
		self::$deleted = array();
	}

	// --- events -----------------------------------------------------------------------

	/**
	 * Turns the queue into wire events, each post described by its state now. Each says
	 * when ("at", Unix seconds), which is after the change: the daemon answers it
	 * without a fetch of its own when it re-rendered the post after that, as it does
	 * for changes it read from the database while the event waited in the outbox.
	 */
	public static function build_events(): array {
		$events = array();
		$at     = round( microtime( true ), 3 );
		foreach ( self::$queue as $item ) {
			if ( 'post' === $item['kind'] ) {
				$events[] = self::post_event( $item );
			} elseif ( 'term' === $item['kind'] ) {
				$events[] = array(
					'id'       => wp_generate_uuid4(),
					'type'     => 'term_changed',
					'term_id'  => $item['term_id'],
					'taxonomy' => $item['taxonomy'],
					'post_ids' => $item['post_ids'],
				);
			} else {
				$events[] = array(
					'id'   => wp_generate_uuid4(),
					'type' => $item['type'],
				);
			}
			$events[ count( $events ) - 1 ]['at'] = $at;
		}
		return $events;
	}

	private static function post_event( array $item ): array {
		$id   = $item['post_id'];
		$post = 'deleted' === $item['reason'] ? null : get_post( $id );
		$ev   = array(
			'id'        => wp_generate_uuid4(),
			'type'      => 'post_deleted',
			'post_id'   => $id,
			'post_type' => $post ? $post->post_type : $item['post_type'],
		);
		if ( ! $post ) {
			$ev['public'] = false;
			return $ev;
		}
		$ev['status'] = $post->post_status;
		if ( 'trash' === $post->post_status ) {
			$ev['type']   = 'post_trashed';
			$ev['public'] = false;
			return $ev;
		}
		if ( ! self::is_public( $post ) ) {
			// Only the ID and "not public" leave: no title, no content, no URL.
			$ev['type']   = 'post_unpublished';
			$ev['public'] = false;
			return $ev;
		}
		$ev['type']     = 'published' === $item['reason'] ? 'post_published' : 'post_updated';
		$ev['public']   = true;
		$ev['url']      = (string) get_permalink( $post );
		$ev['modified'] = self::rfc3339( $post->post_modified_gmt );
		return $ev;
	}

	/** Published, not password-protected, of a viewable type. */
	public static function is_public( WP_Post $post ): bool {
		return 'publish' === $post->post_status
			&& '' === (string) $post->post_password
			&& is_post_type_viewable( $post->post_type );
	}

	private static function rfc3339( string $gmt ): string {
		$t = ( '' === $gmt || '0000-00-00 00:00:00' === $gmt ) ? time() : strtotime( $gmt . ' UTC' );
		return gmdate( 'Y-m-d\TH:i:s\Z', $t ? $t : time() );
	}

	// --- sending ------------------------------------------------------------------------

	/**
	 * The signature header value for a body: sha256=hex(HMAC-SHA256(secret, ts.body)).
	 * api/testdata/webhook-vector.json pins it for PHP and Go alike.
	 */
	public static function sign( string $body, string $timestamp, string $secret ): string {
		return 'sha256=' . hash_hmac( 'sha256', $timestamp . '.' . $body, $secret );
	}

	/**
	 * Sends everything queued as signed batches and empties the queue. What the daemon
	 * does not take (no answer, a timeout, an error) goes to the outbox, with whatever
	 * batches were still to go; while the outbox holds events, new ones join it, so that
	 * they leave in order, and go out with it when its backoff allows. Each attempt waits
	 * a fraction of a second at most.
	 *
	 * @return array|null One result per request (status, error, ms), or null when idle.
	 */
	public static function flush(): ?array {
		if ( empty( self::$queue ) ) {
			return null;
		}
		$events = self::build_events();
		self::clear();
		if ( ! $events ) {
			return null;
		}
		self::$sent = true;
		if ( Askwpd_Cluster::write( $events ) ) {
			return Askwpd_Cluster::ping( $events );
		}
		$s = Askwpd_Settings::get();
		if ( '' === $s['secret'] ) {
			// Kept until a secret is set: unsigned, the daemon would refuse them.
			Askwpd_Outbox::add( $events );
			self::record( array( 'status' => 0, 'error' => __( 'no webhook secret: set ASKWPD_WEBHOOK_SECRET or make webhook.secret in the state dir readable', 'askwpd-companion' ) ) );
			return array();
		}
		if ( Askwpd_Outbox::depth() > 0 ) {
			Askwpd_Outbox::add( $events );
			return Askwpd_Outbox::due() ? Askwpd_Outbox::drain() : array();
		}
		$results = array();
		$batches = array_chunk( $events, self::BATCH );
		foreach ( $batches as $i => $batch ) {
			$r         = self::send( $batch );
			$results[] = $r;
			if ( ! self::delivered( $r ) ) {
				Askwpd_Outbox::add( array_merge( ...array_slice( $batches, $i ) ) );
				Askwpd_Outbox::failed( $r );
				break;
			}
		}
		self::record( end( $results ) );
		return $results;
	}

	/** Whether this request has sent, or tried to send, events already. */
	public static function sent_this_request(): bool {
		return self::$sent;
	}

	/**
	 * One signed request carrying events.
	 *
	 * @param array    $events     Wire events.
	 * @param int|null $timeout_ms How long to wait (default: the webhook timeout, 750 ms).
	 * @return array A result of Askwpd_Client::request().
	 */
	public static function send( array $events, ?int $timeout_ms = null ): array {
		$s    = Askwpd_Settings::get();
		$body = (string) wp_json_encode( array( 'events' => array_values( $events ) ), JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE );
		$ts   = (string) time();
		return Askwpd_Client::request(
			'POST',
			'/v1/events',
			$body,
			array(
				'Content-Type: application/json',
				'X-Askwpd-Timestamp: ' . $ts,
				'X-Askwpd-Signature: ' . self::sign( $body, $ts, $s['secret'] ),
			),
			array(
				'auth'       => false,
				'connect_ms' => (int) apply_filters( 'askwpd_webhook_connect_ms', 250 ),
				'timeout_ms' => $timeout_ms ?? (int) apply_filters( 'askwpd_webhook_timeout_ms', 750 ),
			)
		);
	}

	/**
	 * Whether the daemon took a request's events.
	 *
	 * @param array $r A result of send().
	 */
	public static function delivered( array $r ): bool {
		return $r['status'] >= 200 && $r['status'] < 300;
	}

	/**
	 * Remembers the last delivery for the admin page. It writes only when the outcome
	 * changes, or once a minute while failing, so a healthy site does no extra writes.
	 *
	 * @param array $r status, error.
	 */
	public static function record( array $r ): void {
		$ok   = $r['status'] >= 200 && $r['status'] < 300;
		$last = get_option( self::DELIVERY_OPTION );
		if ( is_array( $last ) && $last['ok'] === $ok && ( $ok || time() - (int) $last['at'] < 60 ) ) {
			return;
		}
		$err = (string) $r['error'];
		if ( '' === $err && ! $ok ) {
			$err = 'HTTP ' . (int) $r['status'];
		}
		update_option(
			self::DELIVERY_OPTION,
			array(
				'ok'     => $ok,
				'at'     => time(),
				'status' => (int) $r['status'],
				'error'  => substr( $err, 0, 300 ),
			),
			true
		);
	}
}
