<?php
/**
 * Loads a BEIR corpus (corpus.jsonl: {"_id", "title", "text"} a line) into WordPress as
 * published posts, fast (multi-row inserts through $wpdb in one PHP process; SciFact's
 * 5,183 documents take seconds), and removes them again.
 *
 *   php load-corpus.php --url=http://127.0.0.1:8089 --corpus=PATH [--limit=N]   # load (idempotent)
 *   php load-corpus.php --url=http://127.0.0.1:8089 --remove                     # delete every loaded post
 *
 * Each post carries the meta _askwpd_corpus = the document's _id, the category "Corpus", and
 * its text as paragraph blocks (one per line of the text, or the whole text). Dates are spread
 * over the 2 to 6 years before the run, so they never become the site's most recent posts.
 */

if (PHP_SAPI !== 'cli') {
    exit(1);
}
$opts = getopt('', array('url:', 'corpus:', 'limit:', 'remove'));
$askwpd_url = rtrim($opts['url'] ?? (getenv('SITE_URL') ?: ''), '/');
if (!preg_match('#^https?://[^/]+$#', $askwpd_url) || (!isset($opts['remove']) && !isset($opts['corpus']))) {
    fwrite(STDERR, "usage: php load-corpus.php --url=http://HOST:PORT (--corpus=corpus.jsonl [--limit=N] | --remove)\n");
    exit(2);
}
$limit = isset($opts['limit']) ? (int) $opts['limit'] : 0;

require __DIR__ . '/cli-request.php';
require askwpd_cli_request($askwpd_url);

function corpus_log($msg) {
    fwrite(STDERR, "[wp] corpus: $msg\n");
}

global $wpdb;
$t0 = microtime(true);
const CORPUS_META = '_askwpd_corpus';
const CORPUS_CATEGORY = 'corpus';

function corpus_category_tt() {
    $t = get_term_by('slug', CORPUS_CATEGORY, 'category');
    if ($t) {
        return (int) $t->term_taxonomy_id;
    }
    $r = wp_insert_term('Corpus', 'category', array('slug' => CORPUS_CATEGORY, 'description' => 'A retrieval corpus loaded for benchmarks.'));
    if (is_wp_error($r)) {
        corpus_log('category: ' . $r->get_error_message());
        exit(1);
    }
    return (int) $r['term_taxonomy_id'];
}

function corpus_remove() {
    global $wpdb;
    $ids = array_map('intval', $wpdb->get_col($wpdb->prepare(
        "SELECT post_id FROM {$wpdb->postmeta} WHERE meta_key = %s", CORPUS_META
    )));
    foreach (array_chunk($ids, 1000) as $chunk) {
        $in = implode(',', $chunk);
        $wpdb->query("DELETE FROM {$wpdb->term_relationships} WHERE object_id IN ($in)");
        $wpdb->query("DELETE FROM {$wpdb->postmeta} WHERE post_id IN ($in)");
        $wpdb->query("DELETE FROM {$wpdb->comments} WHERE comment_post_ID IN ($in)");
        $wpdb->query("DELETE FROM {$wpdb->posts} WHERE ID IN ($in) OR (post_parent IN ($in) AND post_type = 'revision')");
    }
    $t = get_term_by('slug', CORPUS_CATEGORY, 'category');
    if ($t) {
        wp_delete_term((int) $t->term_id, 'category');
    }
    wp_cache_flush();
    return count($ids);
}

if (isset($opts['remove'])) {
    $n = corpus_remove();
    corpus_log("removed $n posts in " . round(microtime(true) - $t0, 1) . ' s');
    exit(0);
}

$fh = fopen($opts['corpus'], 'r');
if (!$fh) {
    corpus_log('cannot read ' . $opts['corpus']);
    exit(1);
}
$have = array_flip($wpdb->get_col($wpdb->prepare(
    "SELECT meta_value FROM {$wpdb->postmeta} WHERE meta_key = %s", CORPUS_META
)));
$cat_tt = corpus_category_tt();
$author = get_user_by('login', 'admin');
$author_id = $author ? (int) $author->ID : 1;
$base = time() - 2 * 365 * 86400;
$docs = array();
$line = 0;
while (($l = fgets($fh)) !== false) {
    $line++;
    $l = trim($l);
    if ($l === '') {
        continue;
    }
    $d = json_decode($l, true);
    if (!is_array($d) || !isset($d['_id'])) {
        corpus_log("line $line is not a corpus document");
        exit(1);
    }
    if ($limit > 0 && count($docs) + count($have) >= $limit) {
        break;
    }
    if (!isset($have[(string) $d['_id']])) {
        $docs[] = $d;
    }
}
fclose($fh);

$inserted = 0;
foreach (array_chunk($docs, 250) as $chunk) {
    $rows = array();
    $names = array();
    foreach ($chunk as $d) {
        $id = (string) $d['_id'];
        $title = trim((string) ($d['title'] ?? ''));
        if ($title === '') {
            $title = 'Document ' . $id;
        }
        $content = '';
        foreach (preg_split('/\n+/', trim((string) ($d['text'] ?? ''))) as $p) {
            if ($p !== '') {
                $content .= "<!-- wp:paragraph -->\n<p>" . esc_html($p) . "</p>\n<!-- /wp:paragraph -->\n\n";
            }
        }
        $ts = $base - (int) ((crc32("askwpd-corpus-date-$id") % (4 * 365 * 24)) * 3600);
        $gmt = gmdate('Y-m-d H:i:s', $ts);
        $local = get_date_from_gmt($gmt);
        $name = substr('c' . sanitize_title($id) . '-' . sanitize_title($title), 0, 190);
        $names[$name] = $id;
        $rows[] = $wpdb->prepare(
            '(%d, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %d, %s, %d, %s, %s, %d)',
            $author_id, $local, $gmt, rtrim($content), esc_html($title), '', 'publish', 'closed', 'closed', '', $name, '', '',
            $local, $gmt, '', 0, '', 0, 'post', '', 0
        );
    }
    $wpdb->query("INSERT INTO {$wpdb->posts} (post_author, post_date, post_date_gmt, post_content, post_title, post_excerpt,
        post_status, comment_status, ping_status, post_password, post_name, to_ping, pinged, post_modified, post_modified_gmt,
        post_content_filtered, post_parent, guid, menu_order, post_type, post_mime_type, comment_count) VALUES " . implode(',', $rows));
    if ($wpdb->last_error) {
        corpus_log('insert failed: ' . $wpdb->last_error);
        exit(1);
    }
    $in = implode(',', array_map(function ($n) {
        return "'" . esc_sql($n) . "'";
    }, array_keys($names)));
    $ids = $wpdb->get_results("SELECT ID, post_name FROM {$wpdb->posts} WHERE post_type = 'post' AND post_name IN ($in)");
    $mrows = array();
    $trows = array();
    $guids = array();
    foreach ($ids as $r) {
        $mrows[] = $wpdb->prepare('(%d, %s, %s)', $r->ID, CORPUS_META, $names[$r->post_name]);
        $trows[] = sprintf('(%d, %d, 0)', $r->ID, $cat_tt);
        $guids[] = (int) $r->ID;
    }
    if (count($ids) !== count($chunk)) {
        corpus_log(sprintf('inserted %d posts but found %d back (a post_name collided?)', count($chunk), count($ids)));
        exit(1);
    }
    $wpdb->query("INSERT INTO {$wpdb->postmeta} (post_id, meta_key, meta_value) VALUES " . implode(',', $mrows));
    $wpdb->query("INSERT IGNORE INTO {$wpdb->term_relationships} (object_id, term_taxonomy_id, term_order) VALUES " . implode(',', $trows));
    $wpdb->query($wpdb->prepare(
        "UPDATE {$wpdb->posts} SET guid = CONCAT(%s, ID) WHERE ID IN (" . implode(',', $guids) . ')',
        home_url('/?p=')
    ));
    $inserted += count($ids);
}
if ($inserted) {
    wp_update_term_count_now(array($cat_tt), 'category');
    wp_cache_flush();
}
$total = (int) $wpdb->get_var($wpdb->prepare("SELECT COUNT(*) FROM {$wpdb->postmeta} WHERE meta_key = %s", CORPUS_META));
corpus_log(sprintf('%d corpus posts (%d inserted) in %.1f s', $total, $inserted, microtime(true) - $t0));
