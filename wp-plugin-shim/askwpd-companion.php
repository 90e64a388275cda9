<?php
/**
 * Plugin Name:       AskWP Companion (askwpd)
 * Plugin URI:        https://github.com/askwp/askwpd
 * Description:       Connects WordPress to the askwpd daemon: signed change webhooks, a chat proxy that serves existing AskWP widgets from the daemon, the site's search as abilities for WordPress's AI and MCP, an index status page under Tools, and Site Health checks.
 * Version:           0.1.0
 * Requires at least: 6.1
 * Requires PHP:      7.4
 * Author:            askwpd
 * License:           GPL-2.0-or-later
 * License URI:       https://www.gnu.org/licenses/gpl-2.0.html
 * Text Domain:       askwpd-companion
 * Domain Path:       /languages
 */

if ( ! defined( 'ABSPATH' ) ) {
	exit;
}

define( 'ASKWPD_COMPANION_VERSION', '0.1.0' );
define( 'ASKWPD_COMPANION_FILE', __FILE__ );

require_once __DIR__ . '/includes/class-askwpd-settings.php';
require_once __DIR__ . '/includes/class-askwpd-client.php';
require_once __DIR__ . '/includes/class-askwpd-webhooks.php';
require_once __DIR__ . '/includes/class-askwpd-cluster.php';
require_once __DIR__ . '/includes/class-askwpd-chat.php';
require_once __DIR__ . '/includes/class-askwpd-admin.php';
require_once __DIR__ . '/includes/class-askwpd-health.php';
require_once __DIR__ . '/includes/class-askwpd-insights.php';
require_once __DIR__ . '/includes/class-askwpd-outbox.php';
require_once __DIR__ . '/includes/class-askwpd-network.php';
require_once __DIR__ . '/includes/class-askwpd-abilities.php';
require_once __DIR__ . '/includes/class-askwpd-origin.php';

add_action(
	'init',
	static function () {
		load_plugin_textdomain( 'askwpd-companion', false, dirname( plugin_basename( ASKWPD_COMPANION_FILE ) ) . '/languages' );
	},
	1
);

Askwpd_Settings::init();
Askwpd_Health::init();
Askwpd_Webhooks::init();
Askwpd_Chat::init();
Askwpd_Insights::init();
Askwpd_Outbox::init();
Askwpd_Network::init();
Askwpd_Abilities::init();
Askwpd_Origin::init();
if ( is_admin() ) {
	Askwpd_Admin::init();
}

register_activation_hook( __FILE__, array( 'Askwpd_Admin', 'activate' ) );
register_deactivation_hook( __FILE__, array( 'Askwpd_Admin', 'deactivate' ) );
