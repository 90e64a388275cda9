<?php
/**
 * Installs WordPress without a browser and converges the site options. Idempotent.
 *
 *   php install.php --url=http://127.0.0.1:8089 [--title=..] [--tagline=..] [--admin-user=admin]
 *                   [--admin-password=.. or env ASKWPD_ADMIN_PASSWORD] [--admin-email=..]
 *                   [--theme=twentytwentyfive]
 *                   [--fresh] [--seed [--manifest=FILE]]
 *
 * --fresh: the site may not be installed yet (wp-up.sh checked the tables): load WordPress
 *          with WP_INSTALLING, which it needs before it is installed, and install it.
 * --seed:  then run seed.php in this same process (saves a WordPress boot on re-runs; not
 *          with --fresh, because WP_INSTALLING skips the theme's functions.php and plugins).
 *
 * Every run: home/siteurl = --url (the port may change between runs), pretty permalinks,
 * search engines allowed (the core sitemap needs blog_public=1), the theme active, the admin
 * password as given.
 */

if (PHP_SAPI !== 'cli') {
    exit(1);
}

$opts = getopt('', array(
    'url:', 'title::', 'tagline::', 'admin-user::', 'admin-password::', 'admin-email::', 'theme::',
    'fresh', 'seed', 'manifest::',
));
$askwpd_fresh = isset($opts['fresh']);
$askwpd_seed = isset($opts['seed']) && !$askwpd_fresh;
$askwpd_manifest = $opts['manifest'] ?? '';
$askwpd_url = rtrim($opts['url'] ?? (getenv('SITE_URL') ?: ''), '/');
if (!preg_match('#^https?://[^/]+$#', $askwpd_url)) {
    fwrite(STDERR, "install.php: --url=http://HOST:PORT is required\n");
    exit(2);
}
$askwpd_title = $opts['title'] ?? 'Askwpd Demo';
$askwpd_tagline = $opts['tagline'] ?? 'Field notes on coffee, self-hosting and small tools';
$askwpd_admin = $opts['admin-user'] ?? 'admin';
$askwpd_admin_pw = $opts['admin-password'] ?? (getenv('ASKWPD_ADMIN_PASSWORD') ?: ''); // env keeps it out of ps
$askwpd_admin_email = $opts['admin-email'] ?? 'admin@example.com';
$askwpd_theme = $opts['theme'] ?? 'twentytwentyfive';
const ASKWPD_PERMALINKS = '/%year%/%monthnum%/%day%/%postname%/';

require __DIR__ . '/cli-request.php';
$askwpd_wp_load = askwpd_cli_request($askwpd_url);

// Loading WordPress before it is installed would redirect to wp-admin/install.php.
if ($askwpd_fresh) {
    define('WP_INSTALLING', true);
}

// No mail server: skip the "your new site" mail (pluggable, checked with function_exists).
function wp_new_blog_notification($blog_title, $blog_url, $user_id, $password) {
}

require $askwpd_wp_load;
require_once ABSPATH . 'wp-admin/includes/upgrade.php';
require_once ABSPATH . 'wp-admin/includes/user.php';

function askwpd_out($msg) {
    fwrite(STDERR, "[wp] $msg\n");
}

if (!is_blog_installed()) {
    askwpd_out("installing WordPress ($askwpd_title)");
    // wp_install() would probe the web server with HTTP requests to pick a permalink
    // structure; it bails out when one is already set.
    $askwpd_pre = function () {
        return ASKWPD_PERMALINKS;
    };
    add_filter('pre_option_permalink_structure', $askwpd_pre);
    $r = wp_install($askwpd_title, $askwpd_admin, $askwpd_admin_email, true, '', $askwpd_admin_pw ?: wp_generate_password(24, false));
    remove_filter('pre_option_permalink_structure', $askwpd_pre);
    if (is_wp_error($r) || empty($r['user_id'])) {
        askwpd_out('wp_install failed: ' . (is_wp_error($r) ? $r->get_error_message() : 'no user'));
        exit(1);
    }
    // Drop the default content so that the seeded content alone defines "latest post",
    // "the one draft", etc.: "Hello world!" (+ its comment), "Sample Page", the draft
    // "Privacy Policy" page.
    foreach (array(array('hello-world', 'post'), array('sample-page', 'page'), array('privacy-policy', 'page')) as $d) {
        $p = get_page_by_path($d[0], OBJECT, $d[1]);
        if ($p) {
            wp_delete_post($p->ID, true);
        }
    }
    update_option('wp_page_for_privacy_policy', 0);
}

// Options converged on every run (update_option() writes only on change).
update_option('home', $askwpd_url);
update_option('siteurl', $askwpd_url);
update_option('blogname', $askwpd_title);
update_option('blogdescription', $askwpd_tagline);
update_option('blog_public', '1');
update_option('admin_email', $askwpd_admin_email);
if (get_option('permalink_structure') !== ASKWPD_PERMALINKS) {
    update_option('permalink_structure', ASKWPD_PERMALINKS);
    update_option('rewrite_rules', ''); // seed.php flushes the rules with everything registered
}
update_option('category_base', '');
update_option('tag_base', '');

// Theme: the release's own (wp-content/themes of the site's tree).
$askwpd_t = wp_get_theme($askwpd_theme);
if (!$askwpd_t->exists() || $askwpd_t->errors()) {
    askwpd_out("theme $askwpd_theme is missing or broken in " . get_theme_root());
    exit(1);
}
if (get_option('stylesheet') !== $askwpd_theme || get_option('template') !== $askwpd_t->get_template()) {
    askwpd_out("activating theme $askwpd_theme");
    switch_theme($askwpd_theme);
}

// Admin user: the password given by wp-up.sh (kept in the state dir).
$askwpd_user = get_user_by('login', $askwpd_admin);
if (!$askwpd_user) {
    askwpd_out("admin user $askwpd_admin is missing");
    exit(1);
}
if ($askwpd_admin_pw !== '' && !wp_check_password($askwpd_admin_pw, $askwpd_user->user_pass, $askwpd_user->ID)) {
    askwpd_out("setting the password of $askwpd_admin");
    wp_set_password($askwpd_admin_pw, $askwpd_user->ID);
}
if ($askwpd_user->display_name !== 'Jonas Berger') {
    wp_update_user(array('ID' => $askwpd_user->ID, 'display_name' => 'Jonas Berger', 'first_name' => 'Jonas', 'last_name' => 'Berger', 'nickname' => 'jonas'));
}

if ($askwpd_seed) {
    require __DIR__ . '/seed.php'; // global scope; it sees $askwpd_url and $askwpd_manifest
}
