<?php
/**
 * askwpd's read tools as WordPress abilities (WordPress 6.9+), and an MCP server for them
 * when the MCP Adapter plugin is active.
 *
 * The abilities are built from includes/tool-schemas.json, which the daemon's Go schemas
 * write (go generate ./tool): name, title, description, annotations, input and output
 * schemas come from there, never from a copy here. Each ability runs its tool on the daemon
 * through Askwpd_Client, with the site's token. The tools that reach past the index
 * (openWorldHint: fetch_live_url) are not offered.
 *
 * Who may run them: any logged-in user who can "read" (subscribers included), by default.
 * The tools answer only from the site's public pages, which anybody can read on the site;
 * the login keeps anonymous callers from spending the daemon's search (and its live
 * fetches) through an endpoint without the chat's rate limit. The filter
 * askwpd_can_run_ability changes that, e.g. '__return_true' for anonymous callers too.
 *
 * Before 6.9 there is no Abilities API and none of this registers.
 *
 * @package askwpd-companion
 */

if ( ! defined( 'ABSPATH' ) ) {
	exit;
}

final class Askwpd_Abilities {

	const CATEGORY = 'askwpd';

	/** The MCP Adapter server's id, and its REST namespace and route: /wp-json/askwpd/mcp. */
	const MCP_SERVER    = 'askwpd';
	const MCP_NAMESPACE = 'askwpd';
	const MCP_ROUTE     = 'mcp';

	/** @var array|null The tools of tool-schemas.json, by name. */
	private static $tools = null;

	public static function init(): void {
		if ( ! self::available() ) {
			return;
		}
		add_action( 'wp_abilities_api_categories_init', array( __CLASS__, 'register_category' ) );
		add_action( 'wp_abilities_api_init', array( __CLASS__, 'register' ) );
		add_action( 'mcp_adapter_init', array( __CLASS__, 'register_mcp_server' ) );
	}

	/** Whether this WordPress has the Abilities API (6.9+). */
	public static function available(): bool {
		return function_exists( 'wp_register_ability' ) && function_exists( 'wp_register_ability_category' );
	}

	/**
	 * The daemon's tools, from tool-schemas.json: name => tool.
	 *
	 * @return array<string, array>
	 */
	public static function tools(): array {
		if ( null === self::$tools ) {
			self::$tools = array();
			$doc         = wp_json_file_decode( __DIR__ . '/tool-schemas.json', array( 'associative' => true ) );
			foreach ( is_array( $doc ) && isset( $doc['tools'] ) && is_array( $doc['tools'] ) ? $doc['tools'] : array() as $t ) {
				if ( is_array( $t ) && isset( $t['name'], $t['title'], $t['description'], $t['input_schema'], $t['output_schema'] ) ) {
					self::$tools[ (string) $t['name'] ] = $t;
				}
			}
		}
		return self::$tools;
	}

	/**
	 * The tools offered as abilities: those that answer from the index alone.
	 *
	 * @return array<string, array>
	 */
	public static function offered(): array {
		return array_filter(
			self::tools(),
			static function ( array $t ) {
				return ! empty( $t['annotations']['readOnlyHint'] ) && empty( $t['annotations']['openWorldHint'] );
			}
		);
	}

	/**
	 * An ability's name: askwpd/search-site for search_site.
	 *
	 * @param string $tool The daemon's tool name.
	 */
	public static function ability_name( string $tool ): string {
		return 'askwpd/' . str_replace( '_', '-', $tool );
	}

	public static function register_category(): void {
		wp_register_ability_category(
			self::CATEGORY,
			array(
				'label'       => __( 'AskWP site search', 'askwpd-companion' ),
				'description' => __( 'Search and read this site\'s published pages, with verbatim passages to quote and their URLs to cite (askwpd).', 'askwpd-companion' ),
			)
		);
	}

	public static function register(): void {
		foreach ( self::offered() as $name => $t ) {
			$a     = is_array( $t['annotations'] ?? null ) ? $t['annotations'] : array();
			$input = $t['input_schema'];
			if ( empty( $input['required'] ) ) {
				// Optional arguments only: a call without input is an empty object.
				$input['default'] = array();
			}
			wp_register_ability(
				self::ability_name( $name ),
				array(
					'label'               => (string) $t['title'],
					'description'         => (string) $t['description'],
					'category'            => self::CATEGORY,
					'input_schema'        => $input,
					'output_schema'       => $t['output_schema'],
					'execute_callback'    => static function ( $args = null ) use ( $name ) {
						return self::execute( $name, $args );
					},
					'permission_callback' => static function ( $args = null ) use ( $name ) {
						return self::can_run( self::ability_name( $name ), $args );
					},
					'meta'                => array(
						'annotations'  => array(
							'readonly'      => ! empty( $a['readOnlyHint'] ),
							'destructive'   => ! empty( $a['destructiveHint'] ),
							'idempotent'    => ! empty( $a['idempotentHint'] ),
							'openWorldHint' => ! empty( $a['openWorldHint'] ),
						),
						'show_in_rest' => true,
						'public'       => true,
						'mcp'          => array(
							'public' => true,
							'type'   => 'tool',
						),
					),
				)
			);
		}
	}

	/**
	 * Whether the current user may run an ability.
	 *
	 * @param string $ability The ability's name.
	 * @param mixed  $args    Its input.
	 */
	public static function can_run( string $ability, $args = null ): bool {
		/**
		 * Filters whether the current user may run one of askwpd's abilities. By default any
		 * logged-in user who can "read"; return true to let anonymous callers run them too.
		 *
		 * @param bool   $allowed Default: current_user_can( 'read' ).
		 * @param string $ability The ability's name, e.g. askwpd/search-site.
		 * @param mixed  $args    The ability's input.
		 */
		return (bool) apply_filters( 'askwpd_can_run_ability', current_user_can( 'read' ), $ability, $args );
	}

	/**
	 * Runs a tool on the daemon.
	 *
	 * @param string $tool The daemon's tool name.
	 * @param mixed  $args The ability's input, already validated against the input schema.
	 * @return array|WP_Error The tool's result, or why there is none.
	 */
	public static function execute( string $tool, $args ) {
		$schema = self::tools()[ $tool ]['input_schema'] ?? array();
		$body   = wp_json_encode( self::json_value( is_array( $args ) ? $args : array(), $schema ), JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE );
		/**
		 * Filters how long (in milliseconds) an ability waits for the daemon's answer.
		 *
		 * @param int    $ms   Default: 25 seconds, past the daemon's own limit on a search.
		 * @param string $tool The tool's name.
		 */
		$timeout = (int) apply_filters( 'askwpd_ability_timeout_ms', 25000, $tool );
		$r       = Askwpd_Client::request(
			'POST',
			'/v1/tools/' . rawurlencode( $tool ),
			(string) $body,
			array( 'Content-Type: application/json', 'Accept: application/json' ),
			array(
				'connect_ms' => 1000,
				'timeout_ms' => max( 1000, $timeout ),
			)
		);
		$d       = Askwpd_Client::json( $r );
		if ( 200 === $r['status'] && is_array( $d ) ) {
			return $d;
		}
		return self::error( $r, $d );
	}

	/**
	 * A WP_Error for a tool call the daemon did not answer with a result: its code says
	 * what went wrong, its message what to do.
	 *
	 * @param array      $r A client result.
	 * @param array|null $d Its decoded body.
	 */
	public static function error( array $r, $d ): WP_Error {
		$s    = Askwpd_Settings::get();
		$page = __( 'Tools → AskWP Index', 'askwpd-companion' );
		if ( 0 === $r['status'] ) {
			if ( 28 === (int) $r['errno'] ) {
				return new WP_Error(
					'askwpd_timeout',
					/* translators: 1: milliseconds */
					sprintf( __( 'The askwpd daemon did not answer within %1$d ms. Try again; if it keeps happening, read its log (journalctl -u askwpd).', 'askwpd-companion' ), (int) round( $r['ms'] ) ),
					array( 'status' => 504 )
				);
			}
			return new WP_Error(
				'askwpd_unavailable',
				/* translators: 1: the daemon's address, 2: the error, 3: the name of the status page */
				sprintf( __( 'The askwpd daemon does not answer at %1$s (%2$s). Start it (systemctl start askwpd), or check its address on %3$s.', 'askwpd-companion' ), $s['url'], $r['error'], $page ),
				array( 'status' => 503 )
			);
		}
		$code = is_array( $d ) && isset( $d['error']['code'] ) && is_string( $d['error']['code'] ) ? $d['error']['code'] : '';
		$msg  = is_array( $d ) && isset( $d['error']['message'] ) && is_string( $d['error']['message'] ) ? $d['error']['message'] : '';
		if ( 401 === $r['status'] || 403 === $r['status'] ) {
			return new WP_Error(
				'askwpd_unauthorized',
				/* translators: %s: the name of the status page */
				sprintf( __( 'The askwpd daemon refused this site\'s token. %s says where the token comes from and how to fix it.', 'askwpd-companion' ), $page ),
				array( 'status' => 502 )
			);
		}
		if ( $r['status'] >= 400 && $r['status'] < 500 && '' !== $msg ) {
			// The caller's mistake, in the daemon's words (e.g. "query is required").
			return new WP_Error( 'askwpd_' . ( '' === $code ? 'rejected' : sanitize_key( $code ) ), $msg, array( 'status' => $r['status'] ) );
		}
		return new WP_Error(
			'askwpd_daemon_error',
			/* translators: 1: HTTP status, 2: the daemon's message */
			sprintf( __( 'The askwpd daemon failed (HTTP %1$d: %2$s). Read its log (journalctl -u askwpd).', 'askwpd-companion' ), (int) $r['status'], '' === $msg ? __( 'no detail', 'askwpd-companion' ) : $msg ),
			array( 'status' => 502 )
		);
	}

	/**
	 * A decoded value as JSON should encode it: an empty PHP array where the schema wants
	 * an object becomes an object ({} rather than []), so the daemon's strict decoder
	 * reads it.
	 *
	 * @param mixed $v      Value.
	 * @param array $schema Its JSON Schema.
	 * @return mixed
	 */
	public static function json_value( $v, array $schema ) {
		if ( ! is_array( $v ) ) {
			return $v;
		}
		$types = (array) ( $schema['type'] ?? array() );
		if ( in_array( 'object', $types, true ) && ( ! $v || ! wp_is_numeric_array( $v ) ) ) {
			$out = array();
			foreach ( $v as $k => $x ) {
				$out[ $k ] = self::json_value( $x, is_array( $schema['properties'][ $k ] ?? null ) ? $schema['properties'][ $k ] : array() );
			}
			return (object) $out;
		}
		$items = is_array( $schema['items'] ?? null ) ? $schema['items'] : array();
		return array_map(
			static function ( $x ) use ( $items ) {
				return self::json_value( $x, $items );
			},
			$v
		);
	}

	/**
	 * mcp_adapter_init: a server of its own for askwpd, at /wp-json/askwpd/mcp, whose
	 * tools/list holds the abilities themselves. (On the adapter's default server they
	 * are reached through its discover, get-info and execute tools instead.)
	 *
	 * @param object $adapter WP\MCP\Core\McpAdapter.
	 */
	public static function register_mcp_server( $adapter ): void {
		$transport = 'WP\\MCP\\Transport\\HttpTransport';
		$errors    = 'WP\\MCP\\Infrastructure\\ErrorHandling\\ErrorLogMcpErrorHandler';
		/**
		 * Filters whether askwpd registers its own MCP server with the MCP Adapter.
		 *
		 * @param bool $register Default true.
		 */
		if ( ! is_object( $adapter ) || ! method_exists( $adapter, 'create_server' ) || ! class_exists( $transport )
			|| ! apply_filters( 'askwpd_mcp_server', true ) ) {
			return;
		}
		$abilities = array_map( array( __CLASS__, 'ability_name' ), array_keys( self::offered() ) );
		$abilities = array_values( array_filter( $abilities, 'wp_has_ability' ) );
		$adapter->create_server(
			self::MCP_SERVER,
			self::MCP_NAMESPACE,
			self::MCP_ROUTE,
			__( 'AskWP site tools', 'askwpd-companion' ),
			__( 'Search and read this site\'s published pages; quote only verbatim passages (askwpd-verify-quote checks them), and cite their URLs.', 'askwpd-companion' ),
			ASKWPD_COMPANION_VERSION,
			array( $transport ),
			class_exists( $errors ) ? $errors : null,
			null,
			$abilities
		);
	}
}
