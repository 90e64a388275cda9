<?php
/**
 * Loads a BEIR corpus into the test WordPress as published pages or posts, through
 * wp_insert_post, so a relevance test can run against the site itself (WordPress core
 * search, askwpd crawling it). The caller converts each document to HTML first.
 *
 *   php load-beir.php --url=http://127.0.0.1:8089 --post-type=page < docs.jsonl
 *       # stdin: one {"id": "...", "title": "...", "html": "..."} a line
 *       # stdout: one {"id": "...", "post_id": N, "url": "..."} a line
 *   php load-beir.php --url=http://127.0.0.1:8089 --remove
 *       # deletes every loaded document
 *
 * Loaded posts carry the meta _askwpd_beir = the document's id. Loading replaces what an
 * earlier load left. The shim's webhooks are not sent for these posts: a load is setup,
 * not an edit a daemon should hear about.
 */

if (PHP_SAPI !== 'cli') {
    exit(1);
}
$opts = getopt('', array('url:', 'post-type::', 'remove'));
$askwpd_url = rtrim($opts['url'] ?? (getenv('SITE_URL') ?: ''), '/');
$post_type = $opts['post-type'] ?? 'page';
if (!preg_match('#^https?://[^/]+$#', $askwpd_url) || !in_array($post_type, array('page', 'post'), true)) {
    fwrite(STDERR, "usage: php load-beir.php --url=http://HOST:PORT [--post-type=page|post] [--remove] < docs.jsonl\n");
    exit(2);
}

require __DIR__ . '/cli-request.php';
require askwpd_cli_request($askwpd_url);

const BEIR_META = '_askwpd_beir';

if (class_exists('Askwpd_Webhooks')) {
    remove_action('shutdown', array('Askwpd_Webhooks', 'flush'), 100);
}

function beir_remove() {
    global $wpdb;
    $ids = array_map('intval', $wpdb->get_col($wpdb->prepare(
        "SELECT post_id FROM {$wpdb->postmeta} WHERE meta_key = %s", BEIR_META
    )));
    foreach ($ids as $id) {
        wp_delete_post($id, true);
    }
    return count($ids);
}

$t0 = microtime(true);
$removed = beir_remove();
if (isset($opts['remove'])) {
    fwrite(STDERR, "[wp] beir: removed $removed documents in " . round(microtime(true) - $t0, 1) . " s\n");
    exit(0);
}

// The HTML is ours (converted from the corpus), and kses would strip the code blocks'
// attributes; a CLI load has no user to hold unfiltered_html.
kses_remove_filters();
wp_defer_term_counting(true);
$n = 0;
while (($line = fgets(STDIN)) !== false) {
    $line = trim($line);
    if ($line === '') {
        continue;
    }
    $d = json_decode($line, true);
    if (!is_array($d) || !isset($d['id'], $d['title'], $d['html'])) {
        fwrite(STDERR, "load-beir.php: bad line: " . substr($line, 0, 200) . "\n");
        exit(1);
    }
    $id = wp_insert_post(wp_slash(array(
        'post_type' => $post_type,
        'post_status' => 'publish',
        'post_title' => $d['title'] !== '' ? $d['title'] : $d['id'],
        'post_name' => sanitize_title($d['id']),
        'post_content' => $d['html'],
        'meta_input' => array(BEIR_META => $d['id']),
    )), true);
    if (is_wp_error($id)) {
        fwrite(STDERR, "load-beir.php: {$d['id']}: " . $id->get_error_message() . "\n");
        exit(1);
    }
    echo json_encode(array('id' => $d['id'], 'post_id' => $id, 'url' => get_permalink($id))), "\n";
    $n++;
}
wp_defer_term_counting(false);
fwrite(STDERR, "[wp] beir: replaced $removed with $n documents in " . round(microtime(true) - $t0, 1) . " s\n");
