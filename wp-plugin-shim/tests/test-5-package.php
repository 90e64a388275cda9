<?php
/**
 * The plugin as a user gets it: the zip that scripts/build-plugin.sh makes passes
 * WordPress's own upload check, carries readme.txt and the translation template and no
 * tests, and the template covers the strings the plugin shows.
 */

require_once ABSPATH . 'wp-admin/includes/file.php';
require_once ABSPATH . 'wp-admin/includes/class-wp-upgrader.php';
require_once ABSPATH . WPINC . '/pomo/po.php';

function repo_root(): string { return dirname(__DIR__, 2); }

/** Runs a command; returns its exit code and combined output. */
function run_cmd(string $cmd): array {
    exec($cmd . ' 2>&1', $out, $rc);
    return array($rc, implode("\n", $out));
}

test('i18n: languages/askwpd-companion.pot is current, every call in the text domain', function () {
    list($rc, $out) = run_cmd('php ' . escapeshellarg(repo_root() . '/scripts/make-pot.php') . ' --check');
    eq($rc, 0, "make-pot --check: $out");
    $po = new PO();
    ok($po->import_from_file(repo_root() . '/wp-plugin-shim/languages/askwpd-companion.pot'), 'the template parses');
    $ids = array_map(function ($e) { return $e->singular; }, $po->entries);
    foreach (array('AskWP Index', 'Daemon URL', 'The askwpd daemon is down.', 'The assistant is unavailable right now.',
        'The index was last refreshed %s ago.', 'askwpd cannot read %s: the web server is not allowed to.') as $want) {
        ok(in_array($want, $ids, true), "template lacks: $want");
    }
    ok(count($ids) > 100, 'strings: ' . count($ids));
});

test('i18n: a translation reaches the settings page, Site Health and the chat errors', function () {
    $po = new PO();
    $po->import_from_file(repo_root() . '/wp-plugin-shim/languages/askwpd-companion.pot');
    $mo = new MO();
    $de = array(
        'Daemon URL' => 'Daemon-Adresse',
        'The askwpd daemon answers' => 'Der askwpd-Dienst antwortet',
        'The assistant is unavailable right now.' => 'Der Assistent ist gerade nicht erreichbar.',
    );
    foreach ($po->entries as $e) {
        if (isset($de[$e->singular])) {
            $e->translations = array($de[$e->singular]);
            $mo->add_entry($e);
        }
    }
    eq(count($mo->entries), 3, 'entries found in the template');
    // A real .mo, named as WordPress names them: 6.5+ loads a translation file by its
    // extension (.mo or .l10n.php) and refuses others. On 6.5+ the .l10n.php form that
    // WordPress converts .mo files into is checked too.
    $dir = get_temp_dir() . 'askwpd-l10n-' . wp_generate_password(6, false);
    mkdir($dir);
    $file = "$dir/askwpd-companion-de_DE.mo";
    ok($mo->export_to_file($file), 'mo written');
    $files = array($file);
    if (class_exists('WP_Translation_File')) {
        // Elsewhere: beside the .mo, WordPress would load it in the .mo's place.
        mkdir("$dir/php");
        $php = "$dir/php/askwpd-companion-de_DE.l10n.php";
        $out = WP_Translation_File::transform($file, 'php');
        ok(is_string($out) && file_put_contents($php, $out) > 0, 'l10n.php written');
        $files[] = $php;
    }
    cleanup(function () use ($dir) { unload_textdomain('askwpd-companion'); exec('rm -rf ' . escapeshellarg($dir)); });
    foreach ($files as $f) {
        unload_textdomain('askwpd-companion');
        ok(load_textdomain('askwpd-companion', $f), "loaded $f");
        eq(__('Daemon URL', 'askwpd-companion'), 'Daemon-Adresse', 'translated from ' . basename($f));
    }

    wp_set_current_user(1);
    // The page's fields are registered once per request, at admin_init, after the
    // translations load; earlier tests registered them in English.
    $forget = function () { unset($GLOBALS['wp_settings_fields']['askwpd-index'], $GLOBALS['wp_settings_sections']['askwpd-index']); };
    $forget();
    cleanup(function () use ($forget) { wp_set_current_user(0); $forget(); });
    ob_start();
    Askwpd_Admin::render();
    $html = ob_get_clean();
    ok(strpos($html, 'Daemon-Adresse') !== false, 'settings field label translated');
    eq(Askwpd_Health::run('daemon')['label'], 'Der askwpd-Dienst antwortet', 'Site Health label translated');
    eq(WP_Site_Health::get_tests()['async']['askwpd_daemon']['label'], 'Der askwpd-Dienst antwortet', 'test list translated');

    use_daemon(array('url' => env('DEAD_URL')) + fake_daemon());
    $req = new WP_REST_Request('POST', '/askwpd-companion/v1/chat');
    $req->set_header('Content-Type', 'application/json');
    $req->set_body(chat_body('Hello?'));
    $res = rest_do_request($req);
    eq($res->get_status(), 503, 'daemon down');
    eq($res->get_data()['message'] ?? null, 'Der Assistent ist gerade nicht erreichbar.', 'chat error translated');
});

test('zip: scripts/build-plugin.sh makes a package WordPress accepts', function () {
    $dir = get_temp_dir() . 'askwpd-zip-' . wp_generate_password(6, false);
    cleanup(function () use ($dir) { run_cmd('rm -rf ' . escapeshellarg($dir)); });
    list($rc, $out) = run_cmd('bash ' . escapeshellarg(repo_root() . '/scripts/build-plugin.sh') . ' ' . escapeshellarg($dir));
    eq($rc, 0, "build-plugin.sh: $out");
    $zip = "$dir/askwpd-companion.zip";
    eq(trim($out), $zip, 'prints the zip');

    require_once ABSPATH . 'wp-admin/includes/class-pclzip.php';
    $list = (new PclZip($zip))->listContent();
    ok(is_array($list), 'the zip opens');
    $names = array_map(function ($e) { return $e['filename']; }, $list);
    foreach (array('askwpd-companion/askwpd-companion.php', 'askwpd-companion/uninstall.php', 'askwpd-companion/readme.txt',
        'askwpd-companion/languages/askwpd-companion.pot', 'askwpd-companion/includes/class-askwpd-health.php',
        'askwpd-companion/includes/tool-schemas.json', 'askwpd-companion/includes/class-askwpd-abilities.php') as $want) {
        ok(in_array($want, $names, true), "zip lacks $want");
    }
    foreach ($names as $n) {
        ok(strpos($n, 'askwpd-companion/') === 0, "outside the plugin folder: $n");
        ok(strpos($n, '/tests/') === false, "tests shipped: $n");
    }

    // WordPress's own unzip, then the check Plugins → Add New → Upload runs on it.
    // Relaxed ownership: on a host, as here in the nginx run, WordPress's files belong to
    // root and PHP runs as www-data, so only the temp dir is PHP's own.
    ok(WP_Filesystem(false, trailingslashit($dir), true), 'filesystem');
    $res = unzip_file($zip, "$dir/unpacked");
    ok($res === true, 'unzip_file: ' . (is_wp_error($res) ? $res->get_error_message() : ''));
    $up = new Plugin_Upgrader(new Automatic_Upgrader_Skin());
    $src = $up->check_package(trailingslashit("$dir/unpacked/askwpd-companion"));
    ok(!is_wp_error($src), 'check_package: ' . (is_wp_error($src) ? $src->get_error_message() : ''));
    eq($up->new_plugin_data['Name'], 'AskWP Companion (askwpd)', 'plugin name');
    eq($up->new_plugin_data['TextDomain'], 'askwpd-companion', 'text domain');
    eq($up->new_plugin_data['DomainPath'], '/languages', 'domain path');
    eq($up->new_plugin_data['Version'], ASKWPD_COMPANION_VERSION, 'version');

    // readme.txt, as the plugin directory reads its header.
    $readme = file_get_contents("$dir/unpacked/askwpd-companion/readme.txt");
    ok(preg_match('/^=== AskWP Companion \(askwpd\) ===$/m', $readme) === 1, 'title');
    foreach (array('Contributors', 'Tags', 'Requires at least', 'Tested up to', 'Requires PHP', 'Stable tag', 'License', 'License URI') as $h) {
        ok(preg_match('/^' . preg_quote($h, '/') . ': \S/m', $readme) === 1, "readme lacks $h");
    }
    foreach (array('Description', 'Installation', 'Frequently Asked Questions', 'Changelog') as $s) {
        ok(strpos($readme, "== $s ==") !== false, "readme lacks == $s ==");
    }
    preg_match('/^Stable tag: (\S+)/m', $readme, $m);
    eq($m[1], ASKWPD_COMPANION_VERSION, 'Stable tag');
    preg_match('/^Tested up to: (\S+)/m', $readme, $m);
    ok(version_compare($m[1], implode('.', array_slice(explode('.', get_bloginfo('version')), 0, 2)), '>='), 'Tested up to ' . $m[1] . ' covers this WordPress ' . get_bloginfo('version'));
    preg_match('/^Requires at least: (\S+)/m', $readme, $m);
    eq($m[1], $up->new_plugin_data['RequiresWP'], 'Requires at least matches the plugin header');
});
