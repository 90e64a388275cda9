<?php
/**
 * Plugin Name:       AskWP Companion (askwpd)
 * Plugin URI:        https://github.com/askwp/askwpd
 * Description:       Connects WordPress to the askwpd daemon: signed change webhooks, a chat proxy that serves existing AskWP widgets from the daemon, and an index status page under Tools.
 * Version:           0.1.0
 * Requires at least: 6.0
 * Requires PHP:      7.4
 * Author:            askwpd
 * License:           GPL-2.0-or-later
 * Text Domain:       askwpd-companion
 */

if ( ! defined( 'ABSPATH' ) ) {
	exit;
}

define( 'ASKWPD_COMPANION_VERSION', '0.1.0' );
define( 'ASKWPD_COMPANION_FILE', __FILE__ );

require_once __DIR__ . '/includes/class-askwpd-settings.php';
require_once __DIR__ . '/includes/class-askwpd-client.php';
require_once __DIR__ . '/includes/class-askwpd-webhooks.php';
require_once __DIR__ . '/includes/class-askwpd-chat.php';
require_once __DIR__ . '/includes/class-askwpd-admin.php';

Askwpd_Webhooks::init();
Askwpd_Chat::init();
if ( is_admin() ) {
	Askwpd_Admin::init();
}

register_activation_hook( __FILE__, array( 'Askwpd_Admin', 'activate' ) );
register_deactivation_hook( __FILE__, array( 'Askwpd_Admin', 'deactivate' ) );
