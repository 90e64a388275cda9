<?php
/**
 * The benchmark network for bench/network: N extra sites (/bench-01/ ...) of P posts
 * each on the test network, written straight into each site's posts table (wp_insert_post
 * for 10,000 posts would take minutes of the shared machine), or removed again.
 *
 *   php network-bench.php --url=http://127.0.0.1:8093 --sites=20 --posts=500 setup
 *   php network-bench.php --url=http://127.0.0.1:8093 remove
 *
 * setup prints one JSON object: {"sites": [{"blog_id", "home", "urls": [...]}], "words": [...]}.
 */

if (PHP_SAPI !== 'cli') {
    exit(1);
}
$cmd = end($argv);
$opts = getopt('', array('url:', 'sites::', 'posts::'));
$url = rtrim($opts['url'] ?? '', '/');
if (!preg_match('#^http://([^/:]+):(\d+)$#', $url, $m) || !in_array($cmd, array('setup', 'remove'), true)) {
    fwrite(STDERR, "network-bench.php: --url=http://HOST:PORT [--sites=N --posts=P] setup|remove\n");
    exit(2);
}
$_SERVER['HTTP_HOST'] = $m[1] . ':' . $m[2];
$_SERVER['SERVER_NAME'] = $m[1];
$_SERVER['REQUEST_URI'] = '/';
$_SERVER['REQUEST_METHOD'] = 'GET';
$_SERVER['REMOTE_ADDR'] = '127.0.0.1';
define('WP_USE_THEMES', false);
require rtrim(getenv('WP_ROOT') ?: '/usr/share/wordpress', '/') . '/wp-load.php';
require_once ABSPATH . 'wp-admin/includes/ms.php';
global $wpdb;
$domain = DOMAIN_CURRENT_SITE;

if ($cmd === 'remove') {
    foreach (get_sites(array('path__like' => '/bench-', 'number' => 1000)) as $s) {
        if (strpos($s->path, '/bench-') === 0) {
            wpmu_delete_blog((int) $s->blog_id, true);
        }
    }
    exit(0);
}

$nsites = (int) ($opts['sites'] ?? 20);
$nposts = (int) ($opts['posts'] ?? 500);
// A vocabulary of made-up words, letters only, the same on every run.
mt_srand(20);
$syl = array('ka', 'lo', 'mi', 'ne', 'ru', 'ta', 'vo', 'shi', 'den', 'pal', 'gor', 'fen', 'bri', 'sto', 'wel', 'quo');
$words = array();
while (count($words) < 600) {
    $w = '';
    for ($k = mt_rand(2, 4); $k > 0; $k--) {
        $w .= $syl[mt_rand(0, count($syl) - 1)];
    }
    $words[$w] = true;
}
$words = array_keys($words);
$pick = function ($n) use ($words) {
    $out = array();
    for ($i = 0; $i < $n; $i++) {
        $out[] = $words[mt_rand(0, count($words) - 1)];
    }
    return implode(' ', $out);
};

$out = array('sites' => array(), 'words' => $words);
for ($i = 1; $i <= $nsites; $i++) {
    $path = sprintf('/bench-%02d/', $i);
    $found = get_sites(array('path' => $path, 'number' => 1));
    if ($found) {
        $id = (int) $found[0]->blog_id;
    } else {
        $id = wp_insert_site(array('domain' => $domain, 'path' => $path, 'title' => "Bench site $i", 'user_id' => 1));
        if (is_wp_error($id)) {
            fwrite(STDERR, $id->get_error_message() . "\n");
            exit(1);
        }
        // wp_insert_site drops the port from the domain.
        $wpdb->update($wpdb->blogs, array('domain' => $domain), array('blog_id' => $id));
        clean_blog_cache($id);
    }
    switch_to_blog($id);
    $home = 'http://' . $domain . rtrim($path, '/');
    if (get_option('home') !== $home) {
        update_option('home', $home);
        update_option('siteurl', $home);
        update_option('blog_public', '1');
        update_option('permalink_structure', '/%year%/%monthnum%/%day%/%postname%/');
        delete_option('rewrite_rules');
    }
    $have = (int) $wpdb->get_var("SELECT COUNT(*) FROM {$wpdb->posts} WHERE post_type = 'post' AND post_status = 'publish' AND post_name LIKE 'bench-post-%'");
    mt_srand(1000 + $i);
    $rows = array();
    for ($p = $have + 1; $p <= $nposts; $p++) {
        $t = gmdate('Y-m-d H:i:s', 1767225600 + $p * 3600 + $i);
        $paras = '';
        for ($k = 0; $k < 3; $k++) {
            $paras .= '<!-- wp:paragraph --><p>' . ucfirst($pick(50)) . '.</p><!-- /wp:paragraph -->';
        }
        $rows[] = $wpdb->prepare('(1, %s, %s, %s, %s, \'\', \'publish\', \'closed\', \'closed\', %s, \'\', \'\', %s, %s, \'\', \'post\', \'\')',
            $t, $t, $paras, ucfirst($pick(4)), "bench-post-$p", $t, $t);
        if (count($rows) === 200 || $p === $nposts) {
            $wpdb->query("INSERT INTO {$wpdb->posts} (post_author, post_date, post_date_gmt, post_content, post_title, post_excerpt,
                post_status, comment_status, ping_status, post_name, to_ping, pinged, post_modified, post_modified_gmt,
                post_content_filtered, post_type, guid) VALUES " . implode(',', $rows));
            $rows = array();
        }
    }
    $urls = array();
    foreach ($wpdb->get_col("SELECT ID FROM {$wpdb->posts} WHERE post_type = 'post' AND post_status = 'publish' AND post_name LIKE 'bench-post-%'") as $pid) {
        $urls[] = get_permalink((int) $pid);
    }
    restore_current_blog();
    $out['sites'][] = array('blog_id' => $id, 'home' => $home, 'urls' => $urls);
}
echo json_encode($out, JSON_UNESCAPED_SLASHES), "\n";
