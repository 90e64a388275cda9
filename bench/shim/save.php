<?php
/**
 * Times N post saves inside WordPress, each followed by what the end of a request does
 * (the shim's shutdown flush when the plugin is active). Prints one duration in ms per
 * line.
 *
 *   SITE_URL=... WP_ROOT=... php save.php N POST_ID
 */
$u = parse_url(getenv('SITE_URL'));
$_SERVER['HTTP_HOST'] = $u['host'] . (isset($u['port']) ? ':' . $u['port'] : '');
$_SERVER['REQUEST_URI'] = '/';
$_SERVER['REQUEST_METHOD'] = 'GET';
define('WP_USE_THEMES', false);
require rtrim(getenv('WP_ROOT'), '/') . '/wp-load.php';
$n = (int) $argv[1];
$id = (int) $argv[2];
for ($i = 0; $i < $n; $i++) {
    $t0 = hrtime(true);
    $r = wp_update_post(array('ID' => $id, 'post_content' => "<p>Bench save $i at " . microtime(true) . '.</p>'), true);
    if (class_exists('Askwpd_Webhooks')) {
        Askwpd_Webhooks::flush();
    }
    $ms = (hrtime(true) - $t0) / 1e6;
    if (is_wp_error($r)) {
        fwrite(STDERR, $r->get_error_message() . "\n");
        exit(1);
    }
    printf("%.3f\n", $ms);
}
