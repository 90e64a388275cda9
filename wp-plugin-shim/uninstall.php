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
delete_option( 'askwpd_companion_outbox' );
delete_option( 'askwpd_companion_db_version' );
wp_clear_scheduled_hook( 'askwpd_outbox_retry' );
global $wpdb;
$wpdb->query( "DROP TABLE IF EXISTS {$wpdb->prefix}askwpd_outbox, {$wpdb->prefix}askwpd_counters" ); // phpcs:ignore WordPress.DB.PreparedSQL.InterpolatedNotPrepared,WordPress.DB.DirectDatabaseQuery.SchemaChange
