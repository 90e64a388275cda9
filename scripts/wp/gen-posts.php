<?php
/**
 * Bulk-generates published posts for scale tests, fast (direct multi-row inserts through
 * $wpdb; 10,000 posts take seconds, not minutes).
 *
 *   php gen-posts.php --url=http://127.0.0.1:8089 --count=N   # ensure generated posts 1..N exist
 *                                                              # (and none numbered above N)
 *   php gen-posts.php --url=http://127.0.0.1:8089 --remove    # delete every generated post
 *
 * Each post i is deterministic (seeded by i): a distinct title ("Ledger 00042: ..."),
 * 3 to 5 sections with h2/h3 headings and 2 to 3 paragraphs each, in block markup, the
 * category "Generated Archive" and two of 24 generated tags. Dates are spread over the
 * 2 to 6 years before the run, so they never become the site's most recent posts.
 * Generated posts carry the meta _askwpd_generated = i.
 */

if (PHP_SAPI !== 'cli') {
    exit(1);
}
$opts = getopt('', array('url:', 'count::', 'remove'));
$askwpd_url = rtrim($opts['url'] ?? (getenv('SITE_URL') ?: ''), '/');
if (!preg_match('#^https?://[^/]+$#', $askwpd_url) || (!isset($opts['remove']) && !isset($opts['count']))) {
    fwrite(STDERR, "usage: php gen-posts.php --url=http://HOST:PORT (--count=N | --remove)\n");
    exit(2);
}
$count = isset($opts['count']) ? (int) $opts['count'] : -1;
if (isset($opts['count']) && (!ctype_digit((string) $opts['count']))) {
    fwrite(STDERR, "gen-posts.php: --count wants a number\n");
    exit(2);
}

require __DIR__ . '/cli-request.php';
require askwpd_cli_request($askwpd_url);

function gen_log($msg) {
    fwrite(STDERR, "[wp] gen: $msg\n");
}

global $wpdb;
$t0 = microtime(true);
const GEN_META = '_askwpd_generated';
const GEN_CATEGORY = 'generated-archive';

/** Term taxonomy ids of every term attached to generated posts (for recounting). */
function gen_term_tt_ids() {
    global $wpdb;
    return array_map('intval', $wpdb->get_col(
        "SELECT DISTINCT tr.term_taxonomy_id FROM {$wpdb->term_relationships} tr
         JOIN {$wpdb->postmeta} m ON m.post_id = tr.object_id AND m.meta_key = '" . GEN_META . "'"
    ));
}

function gen_recount(array $tt_ids) {
    global $wpdb;
    foreach (array('category', 'post_tag') as $tax) {
        $ids = $wpdb->get_col("SELECT term_taxonomy_id FROM {$wpdb->term_taxonomy} WHERE taxonomy = '$tax'"
            . ($tt_ids ? ' AND term_taxonomy_id IN (' . implode(',', $tt_ids) . ')' : ' AND 0'));
        if ($ids) {
            wp_update_term_count_now(array_map('intval', $ids), $tax);
        }
    }
}

/** Deletes generated posts whose number is above $keep (all with $keep = 0). */
function gen_delete_above($keep) {
    global $wpdb;
    $ids = array_map('intval', $wpdb->get_col($wpdb->prepare(
        "SELECT post_id FROM {$wpdb->postmeta} WHERE meta_key = %s AND CAST(meta_value AS UNSIGNED) > %d",
        GEN_META, $keep
    )));
    if (!$ids) {
        return 0;
    }
    $tt = gen_term_tt_ids();
    foreach (array_chunk($ids, 1000) as $chunk) {
        $in = implode(',', $chunk);
        $wpdb->query("DELETE FROM {$wpdb->term_relationships} WHERE object_id IN ($in)");
        $wpdb->query("DELETE FROM {$wpdb->postmeta} WHERE post_id IN ($in)");
        $wpdb->query("DELETE FROM {$wpdb->comments} WHERE comment_post_ID IN ($in)");
        $wpdb->query("DELETE FROM {$wpdb->posts} WHERE ID IN ($in) OR (post_parent IN ($in) AND post_type = 'revision')");
    }
    gen_recount($tt);
    wp_cache_flush();
    return count($ids);
}

if (isset($opts['remove'])) {
    $n = gen_delete_above(0);
    gen_log("removed $n generated posts in " . round(microtime(true) - $t0, 1) . ' s');
    exit(0);
}

// --- vocabulary ----------------------------------------------------------------------
$W = array(
    'adj' => explode(' ', 'amber ancient autumn brass brisk bright calm careful cedar clever coastal copper crisp curious distant dusty early eastern faded fallow gentle gilded granite hidden hollow humble iron ivory juniper lantern late linen lively lone lucid maple marble meadow mellow misty modest northern oaken olive pale patient pebble quiet rapid restless rough rustic saffron salt scarlet silent silver slate slow small smoky southern spare steady stone sudden sunlit tidy timber tranquil velvet violet vivid wandering warm weathered western wild willow windy winter wiry wooden'),
    'noun' => explode(' ', 'anchor archive attic badger barrel basket beacon bellows bicycle bridge brook cabinet canal candle canyon cart cellar chapel chimney cipher clock compass cottage courtyard crane creek dial ditch dovecote engine ferry fiddle forge fountain furnace garden gate glacier granary harbor hearth hedge heron hinge island journal kettle kiln ladder ledger lighthouse loom lumber market meadow mill mirror monastery needle orchard pantry pavilion pier pigeon plough pocket pulley quarry raft reservoir ribbon river saddle satchel scaffold sextant shed shutter signal skiff spindle spring stable staircase stove tannery telescope thimble tower trellis tunnel valley vineyard wagon warehouse weir well wharf windmill workshop'),
    'verb' => explode(' ', 'adjusts borrows carries catalogues checks cleans collects compares counts describes drafts examines explains follows gathers guards inspects keeps labels lists maps measures mends notes observes orders patches polishes prepares records repairs replaces restores samples sketches sorts stores studies tests tracks trims tunes varnishes weighs winds'),
    'adv' => explode(' ', 'briefly carefully cautiously closely daily eagerly evenly firmly gently gradually honestly kindly lightly loosely mostly neatly nightly openly patiently plainly politely promptly quietly rarely roughly seldom slowly smoothly softly steadily swiftly thoroughly twice usually warmly weekly wisely'),
    'prep' => explode(' ', 'above across after against along among around before behind below beside between beyond during inside near past through toward under within without'),
);
$TAG_NAMES = array();
for ($i = 0; $i < 24; $i++) {
    $TAG_NAMES[] = 'gen ' . $W['noun'][($i * 7) % count($W['noun'])];
}

/** Deterministic pick from a list with the seeded Mersenne Twister. */
function gen_pick(array $a) {
    return $a[mt_rand(0, count($a) - 1)];
}
function gen_sentence() {
    global $W;
    $s = 'the ' . gen_pick($W['adj']) . ' ' . gen_pick($W['noun']) . ' ' . gen_pick($W['verb']) . ' the '
        . gen_pick($W['noun']) . ' ' . gen_pick($W['adv']);
    $extra = mt_rand(0, 2);
    for ($k = 0; $k < $extra; $k++) {
        $s .= ' ' . gen_pick($W['prep']) . ' the ' . gen_pick($W['adj']) . ' ' . gen_pick($W['noun']);
    }
    return ucfirst($s) . '.';
}
function gen_paragraph() {
    $n = mt_rand(3, 6);
    $out = array();
    for ($k = 0; $k < $n; $k++) {
        $out[] = gen_sentence();
    }
    return implode(' ', $out);
}
/** Returns [title, content, excerpt, tag indexes] for post number $i. */
function gen_post($i) {
    global $W;
    mt_srand(crc32("askwpd-gen-$i"), MT_RAND_MT19937);
    $title = sprintf('Ledger %05d: The %s %s of the %s %s', $i, ucfirst(gen_pick($W['adj'])), ucfirst(gen_pick($W['noun'])),
        ucfirst(gen_pick($W['adj'])), ucfirst(gen_pick($W['noun'])));
    $c = '';
    $first = gen_paragraph();
    $c .= "<!-- wp:paragraph -->\n<p>$first</p>\n<!-- /wp:paragraph -->\n\n";
    $sections = mt_rand(3, 5);
    for ($s = 0; $s < $sections; $s++) {
        $level = ($s > 0 && mt_rand(0, 3) === 0) ? 3 : 2;
        $h = ucfirst(gen_pick($W['adj'])) . ' ' . gen_pick($W['noun']) . ' ' . gen_pick($W['prep']) . ' the ' . gen_pick($W['noun']);
        $attr = $level === 2 ? '' : ' {"level":3}';
        $c .= "<!-- wp:heading$attr -->\n<h$level>$h</h$level>\n<!-- /wp:heading -->\n\n";
        $paras = mt_rand(2, 3);
        for ($p = 0; $p < $paras; $p++) {
            $c .= "<!-- wp:paragraph -->\n<p>" . gen_paragraph() . "</p>\n<!-- /wp:paragraph -->\n\n";
        }
    }
    $t1 = mt_rand(0, 23);
    $t2 = ($t1 + mt_rand(1, 23)) % 24;
    return array($title, rtrim($c), wp_trim_words($first, 30, '…'), array($t1, $t2));
}

// --- terms -------------------------------------------------------------------------------
function gen_term_tt($name, $slug, $tax) {
    $t = get_term_by('slug', $slug, $tax);
    if (!$t) {
        $r = wp_insert_term($name, $tax, array('slug' => $slug, 'description' => $tax === 'category' ? 'Posts generated for scale tests.' : ''));
        if (is_wp_error($r)) {
            gen_log("term $slug: " . $r->get_error_message());
            exit(1);
        }
        return (int) $r['term_taxonomy_id'];
    }
    return (int) $t->term_taxonomy_id;
}
$cat_tt = gen_term_tt('Generated Archive', GEN_CATEGORY, 'category');
$tag_tt = array();
foreach ($TAG_NAMES as $k => $name) {
    $tag_tt[$k] = gen_term_tt(ucwords($name), sanitize_title($name), 'post_tag');
}

// --- insert --------------------------------------------------------------------------------
$removed = gen_delete_above($count);
$have = array_flip(array_map('intval', $wpdb->get_col($wpdb->prepare(
    "SELECT meta_value FROM {$wpdb->postmeta} WHERE meta_key = %s", GEN_META
))));
$todo = array();
for ($i = 1; $i <= $count; $i++) {
    if (!isset($have[$i])) {
        $todo[] = $i;
    }
}
$author = get_user_by('login', 'admin');
$author_id = $author ? (int) $author->ID : 1;
$base = time() - 2 * 365 * 86400; // older than every seeded post
$inserted = 0;
foreach (array_chunk($todo, 250) as $chunk) {
    $rows = array();
    $names = array();
    $meta = array();
    foreach ($chunk as $i) {
        list($title, $content, $excerpt, $tags) = gen_post($i);
        // Spread over 4 years before $base, deterministic per i.
        $ts = $base - (int) ((crc32("askwpd-gen-date-$i") % (4 * 365 * 24)) * 3600) - ($i % 3600);
        $gmt = gmdate('Y-m-d H:i:s', $ts);
        $local = get_date_from_gmt($gmt);
        $name = sprintf('ledger-%05d', $i) . '-' . sanitize_title(preg_replace('/^Ledger \d+: /', '', $title));
        $name = substr($name, 0, 190);
        $names[$name] = array($i, $tags);
        $rows[] = $wpdb->prepare(
            '(%d, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %d, %s, %d, %s, %s, %d)',
            $author_id, $local, $gmt, $content, $title, $excerpt, 'publish', 'closed', 'closed', '', $name, '', '',
            $local, $gmt, '', 0, '', 0, 'post', '', 0
        );
    }
    $wpdb->query("INSERT INTO {$wpdb->posts} (post_author, post_date, post_date_gmt, post_content, post_title, post_excerpt,
        post_status, comment_status, ping_status, post_password, post_name, to_ping, pinged, post_modified, post_modified_gmt,
        post_content_filtered, post_parent, guid, menu_order, post_type, post_mime_type, comment_count) VALUES " . implode(',', $rows));
    if ($wpdb->last_error) {
        gen_log('insert failed: ' . $wpdb->last_error);
        exit(1);
    }
    $in = implode(',', array_map(function ($n) use ($wpdb) {
        return "'" . esc_sql($n) . "'";
    }, array_keys($names)));
    $ids = $wpdb->get_results("SELECT ID, post_name FROM {$wpdb->posts} WHERE post_type = 'post' AND post_name IN ($in)");
    $mrows = array();
    $trows = array();
    $guids = array();
    foreach ($ids as $r) {
        list($i, $tags) = $names[$r->post_name];
        $mrows[] = $wpdb->prepare('(%d, %s, %s)', $r->ID, GEN_META, (string) $i);
        $trows[] = sprintf('(%d, %d, 0)', $r->ID, $cat_tt);
        $trows[] = sprintf('(%d, %d, 0)', $r->ID, $tag_tt[$tags[0]]);
        $trows[] = sprintf('(%d, %d, 0)', $r->ID, $tag_tt[$tags[1]]);
        $guids[] = (int) $r->ID;
    }
    $wpdb->query("INSERT INTO {$wpdb->postmeta} (post_id, meta_key, meta_value) VALUES " . implode(',', $mrows));
    $wpdb->query("INSERT IGNORE INTO {$wpdb->term_relationships} (object_id, term_taxonomy_id, term_order) VALUES " . implode(',', $trows));
    // guid like WordPress sets it: home_url('/?p=ID').
    $wpdb->query($wpdb->prepare(
        "UPDATE {$wpdb->posts} SET guid = CONCAT(%s, ID) WHERE ID IN (" . implode(',', $guids) . ')',
        home_url('/?p=')
    ));
    $inserted += count($ids);
}
if ($inserted || $removed) {
    gen_recount(array_merge(array($cat_tt), array_values($tag_tt)));
    wp_cache_flush();
}
$total = (int) $wpdb->get_var($wpdb->prepare("SELECT COUNT(*) FROM {$wpdb->postmeta} WHERE meta_key = %s", GEN_META));
gen_log(sprintf('%d generated posts (%d inserted, %d removed) in %.1f s', $total, $inserted, $removed, microtime(true) - $t0));
