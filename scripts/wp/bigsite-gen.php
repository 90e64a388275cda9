<?php
/**
 * Fills a WordPress of its own with N published posts for scale tests (issue #22), through
 * WordPress's own API (wp_insert_post, with categories and tags), so every page renders as
 * a real post does. Idempotent: posts 1..N carry the meta _askwpd_big = i, and a re-run
 * adds only the missing ones (posts numbered above N are left alone).
 *
 *   php bigsite-gen.php --url=http://127.0.0.1:8097 --count=N [--corpus=FILE ...]
 *
 * Text: each post is seeded by its number. Its sentences are drawn from the --corpus files
 * (BEIR corpus.jsonl: SciFact's abstracts, wpdocs' pages), so the vocabulary has a real
 * word distribution; without corpus files a generated vocabulary stands in. A post has a
 * lead paragraph, then 2 to 6 sections under h2/h3 headings, each of 1 to 4 paragraphs,
 * sometimes a list; one of 40 categories and 1 to 4 of 400 tags. Dates spread over the
 * ten years before the run.
 *
 * WordPress's own per-post costs that a bulk load may legitimately put off are put off:
 * term counting (wp_defer_term_counting), object cache invalidation
 * (wp_suspend_cache_invalidation), pings; inserts run in transactions of 500 posts so
 * InnoDB syncs its log once per batch rather than once per row.
 */

if (PHP_SAPI !== 'cli') {
    exit(1);
}
$opts = getopt('', array('url:', 'count:', 'corpus:'));
$askwpd_url = rtrim($opts['url'] ?? '', '/');
$count = $opts['count'] ?? '';
if (!preg_match('#^https?://[^/]+$#', $askwpd_url) || !ctype_digit((string) $count)) {
    fwrite(STDERR, "usage: php bigsite-gen.php --url=http://HOST:PORT --count=N [--corpus=corpus.jsonl ...]\n");
    exit(2);
}
$count = (int) $count;
$corpora = isset($opts['corpus']) ? (array) $opts['corpus'] : array();

require __DIR__ . '/cli-request.php';
require askwpd_cli_request($askwpd_url);

function big_log($msg) {
    fwrite(STDERR, "[wp] bigsite: $msg\n");
}

global $wpdb;
$t0 = microtime(true);
const BIG_META = '_askwpd_big';

// --- sentences -------------------------------------------------------------------------
$sentences = array();
foreach ($corpora as $path) {
    $f = @fopen($path, 'r');
    if (!$f) {
        big_log("no corpus at $path; skipped");
        continue;
    }
    while (($line = fgets($f)) !== false) {
        $d = json_decode($line, true);
        if (!is_array($d) || empty($d['text'])) {
            continue;
        }
        foreach (preg_split('/(?<=[.!?])\s+(?=[A-Z])/', preg_replace('/\s+/', ' ', $d['text'])) as $s) {
            $n = str_word_count($s);
            if ($n >= 5 && $n <= 60) {
                $sentences[] = $s;
            }
        }
    }
    fclose($f);
}
if (count($sentences) < 1000) {
    big_log('fewer than 1000 corpus sentences: generating text from a small vocabulary');
    $adj = explode(' ', 'amber ancient autumn brass brisk bright calm careful cedar clever coastal copper crisp curious distant dusty early eastern faded gentle gilded granite hidden hollow humble iron ivory juniper lively lucid maple marble mellow misty modest northern oaken olive pale patient quiet rapid restless rough rustic saffron scarlet silent silver slate steady stone sunlit tidy timber velvet violet vivid warm weathered wild willow windy wooden');
    $noun = explode(' ', 'anchor archive attic barrel basket beacon bicycle bridge brook cabinet canal candle canyon cellar chapel chimney clock compass cottage courtyard crane creek engine ferry fiddle forge fountain furnace garden gate glacier granary harbor hearth hedge heron island journal kettle kiln ladder ledger lighthouse loom market meadow mill mirror needle orchard pantry pavilion pier plough pocket quarry raft reservoir river saddle satchel sextant shed signal skiff spindle stable staircase stove telescope tower tunnel valley vineyard wagon warehouse weir wharf windmill workshop');
    $verb = explode(' ', 'adjusts borrows carries catalogues checks cleans collects compares counts describes drafts examines explains follows gathers guards inspects keeps labels lists maps measures mends notes observes patches polishes prepares records repairs restores samples sketches sorts stores studies tests tracks tunes weighs winds');
    mt_srand(1);
    for ($k = 0; $k < 20000; $k++) {
        $sentences[] = ucfirst('the ' . $adj[mt_rand(0, count($adj) - 1)] . ' ' . $noun[mt_rand(0, count($noun) - 1)] . ' '
            . $verb[mt_rand(0, count($verb) - 1)] . ' the ' . $noun[mt_rand(0, count($noun) - 1)]) . '.';
    }
}
$ns = count($sentences);

// Tag names: the corpus's frequent longer words, so tags read like a site's topics.
$freq = array();
for ($k = 0; $k < $ns; $k += 7) {
    foreach (str_word_count(strtolower($sentences[$k]), 1) as $w) {
        if (strlen($w) >= 6) {
            $freq[$w] = ($freq[$w] ?? 0) + 1;
        }
    }
}
arsort($freq);
$topics = array_slice(array_keys($freq), 0, 440);
$cat_names = array_slice($topics, 0, 40);
$tag_names = array_slice($topics, 40, 400);

function big_pick_sentence() {
    global $sentences, $ns;
    return $sentences[mt_rand(0, $ns - 1)];
}
function big_paragraph() {
    $n = mt_rand(2, 5);
    $out = array();
    for ($k = 0; $k < $n; $k++) {
        $out[] = big_pick_sentence();
    }
    return esc_html(implode(' ', $out));
}
function big_phrase($max) {
    $w = preg_split('/\s+/', trim(big_pick_sentence(), " .!?"));
    $from = mt_rand(0, max(0, count($w) - $max));
    return esc_html(ucfirst(implode(' ', array_slice($w, $from, mt_rand(3, $max)))));
}
/** Returns [title, content, category, tags] for post number $i. */
function big_post($i) {
    global $cat_names, $tag_names;
    mt_srand(crc32("askwpd-big-$i"), MT_RAND_MT19937);
    $title = big_phrase(9);
    $c = "<!-- wp:paragraph -->\n<p>" . big_paragraph() . "</p>\n<!-- /wp:paragraph -->\n\n";
    $sections = mt_rand(2, 6);
    for ($s = 0; $s < $sections; $s++) {
        $level = ($s > 0 && mt_rand(0, 3) === 0) ? 3 : 2;
        $attr = $level === 2 ? '' : ' {"level":3}';
        $c .= "<!-- wp:heading$attr -->\n<h$level>" . big_phrase(7) . "</h$level>\n<!-- /wp:heading -->\n\n";
        $paras = mt_rand(1, 4);
        for ($p = 0; $p < $paras; $p++) {
            $c .= "<!-- wp:paragraph -->\n<p>" . big_paragraph() . "</p>\n<!-- /wp:paragraph -->\n\n";
        }
        if (mt_rand(0, 4) === 0) {
            $items = '';
            for ($k = mt_rand(3, 5); $k > 0; $k--) {
                $items .= '<li>' . big_phrase(12) . '</li>';
            }
            $c .= "<!-- wp:list -->\n<ul>$items</ul>\n<!-- /wp:list -->\n\n";
        }
    }
    $tags = array();
    for ($k = mt_rand(1, 4); $k > 0; $k--) {
        // Skewed: a few tags are on many posts, most on few, as on a real site.
        $tags[] = $tag_names[(int) floor(count($tag_names) * pow(mt_rand() / mt_getrandmax(), 2))];
    }
    $cat = $cat_names[mt_rand(0, count($cat_names) - 1)];
    return array($title, rtrim($c), $cat, array_values(array_unique($tags)));
}

// --- categories --------------------------------------------------------------------------
$cat_ids = array();
foreach ($cat_names as $name) {
    $t = get_term_by('slug', sanitize_title($name), 'category');
    if (!$t) {
        $r = wp_insert_term(ucfirst($name), 'category', array('slug' => sanitize_title($name)));
        if (is_wp_error($r)) {
            big_log("category $name: " . $r->get_error_message());
            exit(1);
        }
        $cat_ids[$name] = (int) $r['term_id'];
    } else {
        $cat_ids[$name] = (int) $t->term_id;
    }
}

// --- posts -------------------------------------------------------------------------------
$have = array_flip(array_map('intval', $wpdb->get_col($wpdb->prepare(
    "SELECT meta_value FROM {$wpdb->postmeta} WHERE meta_key = %s", BIG_META
))));
$author = get_user_by('login', 'admin');
$author_id = $author ? (int) $author->ID : 1;
$now = time();
wp_defer_term_counting(true);
wp_suspend_cache_invalidation(true);
remove_action('publish_post', '_publish_post_hook', 5, 1); // pings and enclosures: no network here
$inserted = 0;
$batch = 0;
$wpdb->query('START TRANSACTION');
for ($i = 1; $i <= $count; $i++) {
    if (isset($have[$i])) {
        continue;
    }
    list($title, $content, $cat, $tags) = big_post($i);
    $ts = $now - 3600 - (int) (crc32("askwpd-big-date-$i") % (10 * 365 * 86400));
    $id = wp_insert_post(array(
        'post_author' => $author_id,
        'post_title' => $title,
        'post_content' => $content,
        'post_status' => 'publish',
        'post_type' => 'post',
        'post_date_gmt' => gmdate('Y-m-d H:i:s', $ts),
        'post_date' => get_date_from_gmt(gmdate('Y-m-d H:i:s', $ts)),
        'post_category' => array($cat_ids[$cat]),
        'tags_input' => $tags,
        'comment_status' => 'closed',
        'ping_status' => 'closed',
        'meta_input' => array(BIG_META => (string) $i),
    ), true);
    if (is_wp_error($id)) {
        $wpdb->query('ROLLBACK');
        big_log("post $i: " . $id->get_error_message());
        exit(1);
    }
    $inserted++;
    if (++$batch === 500) {
        $wpdb->query('COMMIT');
        $wpdb->query('START TRANSACTION');
        $batch = 0;
        wp_cache_flush(); // the object cache of one process only grows
    }
    if ($inserted % 5000 === 0) {
        big_log(sprintf('%d posts inserted (%.0f s)', $inserted, microtime(true) - $t0));
    }
}
$wpdb->query('COMMIT');
wp_suspend_cache_invalidation(false);
wp_defer_term_counting(false); // recounts the deferred terms
if ($inserted) {
    clean_term_cache(array_values($cat_ids), 'category');
    wp_cache_flush();
}
$total = (int) $wpdb->get_var($wpdb->prepare("SELECT COUNT(*) FROM {$wpdb->postmeta} WHERE meta_key = %s", BIG_META));
big_log(sprintf('%d posts (%d inserted) from %d sentences in %.1f s', $total, $inserted, $ns, microtime(true) - $t0));
