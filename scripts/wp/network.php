<?php
/**
 * Builds the test network for scripts/network-up.sh. Idempotent.
 *
 *   php network.php --url=http://127.0.0.1:8093 install   (single site, then the network tables)
 *   php network.php --url=http://127.0.0.1:8093 --mapped=HOST:PORT --manifest=FILE sites
 *
 * install runs before wp-config.php says MULTISITE (WordPress cannot boot as a network
 * without its tables); sites runs after, and creates the sites and their marker posts.
 * Every site gets public markers (a post and a page) and private ones (a draft, a private
 * post, a password-protected post), each word unique to its site, so a test can tell
 * which site an answer came from and whether anything private leaked.
 */

if (PHP_SAPI !== 'cli') {
    exit(1);
}
$askwpd_cmd = end($argv); // last: getopt() stops at the first word that is not an option
$opts = getopt('', array('url:', 'mapped::', 'manifest::'));
$askwpd_url = rtrim($opts['url'] ?? '', '/');
if (!preg_match('#^http://([^/:]+):(\d+)$#', $askwpd_url, $m) || !in_array($askwpd_cmd, array('install', 'sites'), true)) {
    fwrite(STDERR, "network.php: --url=http://HOST:PORT install|sites\n");
    exit(2);
}
$askwpd_host = $m[1] . ':' . $m[2];
$_SERVER['HTTP_HOST'] = $askwpd_host;
$_SERVER['SERVER_NAME'] = $m[1];
$_SERVER['SERVER_PORT'] = $m[2];
$_SERVER['REQUEST_URI'] = '/';
$_SERVER['REQUEST_METHOD'] = 'GET';
$_SERVER['SERVER_PROTOCOL'] = 'HTTP/1.1';
$_SERVER['REMOTE_ADDR'] = '127.0.0.1';
const ASKWPD_NET_PERMALINKS = '/%year%/%monthnum%/%day%/%postname%/';

function wp_new_blog_notification($blog_title, $blog_url, $user_id, $password) {
}
function askwpd_out($msg) {
    fwrite(STDERR, "[net] $msg\n");
}

if ($askwpd_cmd === 'install') {
    define('WP_INSTALLING', true);
}
require rtrim(getenv('WP_ROOT') ?: '/usr/share/wordpress', '/') . '/wp-load.php';
require_once ABSPATH . 'wp-admin/includes/upgrade.php';

if ($askwpd_cmd === 'install') {
    if (!is_blog_installed()) {
        askwpd_out('installing WordPress');
        add_filter('pre_option_permalink_structure', function () {
            return ASKWPD_NET_PERMALINKS;
        });
        $r = wp_install('Askwpd Network', 'admin', 'admin@example.com', true, '', getenv('ASKWPD_ADMIN_PASSWORD') ?: wp_generate_password(24, false));
        if (is_wp_error($r)) {
            askwpd_out('wp_install failed: ' . $r->get_error_message());
            exit(1);
        }
    }
    update_option('home', $askwpd_url);
    update_option('siteurl', $askwpd_url);
    global $wpdb;
    if ($wpdb->get_var($wpdb->prepare('SHOW TABLES LIKE %s', $wpdb->base_prefix . 'blogs')) === null) {
        askwpd_out('converting to a subdirectory network');
        require_once ABSPATH . 'wp-admin/includes/network.php';
        // As wp-cli's multisite-convert: the network's tables are not registered yet.
        foreach ($wpdb->tables('ms_global') as $table => $prefixed) {
            $wpdb->$table = $prefixed;
        }
        install_network();
        $r = populate_network(1, $askwpd_host, 'admin@example.com', 'Askwpd Network', '/', false);
        if (is_wp_error($r)) {
            askwpd_out('populate_network failed: ' . $r->get_error_message());
            exit(1);
        }
    }
    exit(0);
}

// sites: the network is installed and wp-config.php says MULTISITE.
if (!is_multisite()) {
    askwpd_out('wp-config.php does not define MULTISITE');
    exit(1);
}
$askwpd_mapped = $opts['mapped'] ?? '';
$askwpd_sites = array(
    array('domain' => $askwpd_host, 'path' => '/', 'title' => 'Askwpd Network', 'word' => 'harbor'),
    array('domain' => $askwpd_host, 'path' => '/site2/', 'title' => 'Site Two Orchard', 'word' => 'orchard'),
    array('domain' => $askwpd_host, 'path' => '/site3/', 'title' => 'Site Three Glacier', 'word' => 'glacier'),
    array('domain' => $askwpd_mapped, 'path' => '/', 'title' => 'Mapped Lighthouse', 'word' => 'lighthouse'),
    // Opted out through the option the shim sets: askwpd must never index it.
    array('domain' => $askwpd_host, 'path' => '/optout/', 'title' => 'Opted Out Meadow', 'word' => 'meadow', 'optout' => true),
);
require_once ABSPATH . 'wp-admin/includes/plugin.php';
if (!is_plugin_active_for_network('askwpd-companion/askwpd-companion.php')) {
    $r = activate_plugin('askwpd-companion/askwpd-companion.php', '', true);
    if (is_wp_error($r)) {
        askwpd_out('network-activating the shim failed: ' . $r->get_error_message());
        exit(1);
    }
    askwpd_out('network-activated the shim');
}
global $wpdb;
$manifest = array();
foreach ($askwpd_sites as $s) {
    // wp_insert_site() strips the port from a domain (WordPress supports networks on 80
    // and 443 only), so the row is found under either form and given its port back.
    $bare = preg_replace('/[^a-z0-9\-.]/', '', $s['domain']);
    $found = get_sites(array('path' => $s['path'], 'domain__in' => array($s['domain'], $bare), 'number' => 1));
    if ($found) {
        $id = (int) $found[0]->blog_id;
    } else {
        askwpd_out("creating site {$s['domain']}{$s['path']}");
        $id = wp_insert_site(array('domain' => $s['domain'], 'path' => $s['path'], 'title' => $s['title'], 'user_id' => 1));
        if (is_wp_error($id)) {
            askwpd_out('wp_insert_site failed: ' . $id->get_error_message());
            exit(1);
        }
    }
    $home = 'http://' . $s['domain'] . untrailingslashit($s['path']);
    if (get_site($id)->domain !== $s['domain']) {
        $wpdb->update($wpdb->blogs, array('domain' => $s['domain']), array('blog_id' => $id));
        clean_blog_cache($id);
    }
    // A test may have archived a site and died before restoring it.
    update_blog_status($id, 'archived', 0);
    update_blog_status($id, 'public', 1);
    switch_to_blog($id);
    update_option('blogname', $s['title']);
    if (get_option('home') !== $home || get_option('siteurl') !== $home) {
        update_option('home', $home);
        update_option('siteurl', $home);
        delete_option('rewrite_rules');
    }
    update_option('blog_public', '1');
    if (get_option('permalink_structure') !== ASKWPD_NET_PERMALINKS) {
        update_option('permalink_structure', ASKWPD_NET_PERMALINKS);
        delete_option('rewrite_rules'); // rebuilt on the site's next request
    }
    if (!empty($s['optout'])) {
        update_option('askwpd_exclude', '1');
    } else {
        delete_option('askwpd_exclude');
    }
    $w = $s['word'];
    $markers = array(
        // Letters only: the index splits a word at digits, and the parts would be shared.
        'public' => "{$w}pubnetmark",
        'private' => "{$w}privnetmark",
    );
    $posts = array(
        array('slug' => "net-public-post-$id", 'type' => 'post', 'status' => 'publish', 'pw' => '',
            'title' => "The {$w} notes of site $id", 'text' => "A public post of {$s['title']}. Its marker is {$markers['public']}, found only on this site."),
        array('slug' => "net-public-page-$id", 'type' => 'page', 'status' => 'publish', 'pw' => '',
            'title' => "About the {$w}", 'text' => "The public page of {$s['title']} repeats {$markers['public']} for the page index."),
        array('slug' => "net-draft-$id", 'type' => 'post', 'status' => 'draft', 'pw' => '',
            'title' => "Draft {$markers['private']}", 'text' => "An unpublished draft holding {$markers['private']}."),
        array('slug' => "net-private-$id", 'type' => 'post', 'status' => 'private', 'pw' => '',
            'title' => "Private {$markers['private']}", 'text' => "A private post holding {$markers['private']}."),
        array('slug' => "net-protected-$id", 'type' => 'post', 'status' => 'publish', 'pw' => 'secret-' . $id,
            'title' => "Protected {$w} memo", 'text' => "A password-protected post holding {$markers['private']}."),
    );
    foreach ($posts as $p) {
        $found = get_posts(array('name' => $p['slug'], 'post_type' => $p['type'], 'post_status' => 'any', 'numberposts' => 1));
        $arr = array(
            'post_name' => $p['slug'], 'post_type' => $p['type'], 'post_status' => $p['status'], 'post_password' => $p['pw'],
            'post_title' => $p['title'], 'post_content' => '<!-- wp:paragraph --><p>' . $p['text'] . '</p><!-- /wp:paragraph -->',
            'post_author' => 1,
        );
        if ($found) {
            $arr['ID'] = $found[0]->ID;
            $cur = $found[0];
            if ($cur->post_title === $arr['post_title'] && $cur->post_content === $arr['post_content'] && $cur->post_status === $arr['post_status'] && $cur->post_password === $arr['post_password']) {
                continue;
            }
        }
        $r = wp_insert_post(wp_slash($arr), true);
        if (is_wp_error($r)) {
            askwpd_out('wp_insert_post failed: ' . $r->get_error_message());
            exit(1);
        }
    }
    $manifest[] = array('blog_id' => $id, 'home' => untrailingslashit(get_option('home')), 'name' => $s['title'],
        'public_marker' => $markers['public'], 'private_marker' => $markers['private'], 'opted_out' => !empty($s['optout']));
    restore_current_blog();
}
$json = json_encode($manifest, JSON_PRETTY_PRINT | JSON_UNESCAPED_SLASHES) . "\n";
if (!empty($opts['manifest']) && @file_get_contents($opts['manifest']) !== $json) {
    file_put_contents($opts['manifest'], $json);
}
