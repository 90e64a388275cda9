<?php
/**
 * Removes the shim's options when the plugin is deleted from the Plugins screen.
 *
 * @package askwpd-companion
 */

if ( ! defined( 'WP_UNINSTALL_PLUGIN' ) ) {
	exit;
}
delete_option( 'askwpd_companion_settings' );
delete_option( 'askwpd_companion_delivery' );
delete_transient( 'askwpd_companion_status' );
delete_transient( 'askwpd_companion_breaker' );
