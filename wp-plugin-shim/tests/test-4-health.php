<?php
/**
 * Site Health, admin notices and the Settings API, inside the real WordPress: the tests
 * go through WP_Site_Health, WP_Debug_Data, rest_do_request, and an admin's real POST to
 * wp-admin/options.php.
 */

require_once ABSPATH . 'wp-admin/includes/class-wp-site-health.php';
require_once ABSPATH . 'wp-admin/includes/class-wp-debug-data.php';
require_once ABSPATH . 'wp-admin/includes/screen.php';
require_once ABSPATH . 'wp-admin/includes/class-wp-screen.php';
require_once ABSPATH . 'wp-admin/includes/misc.php';
require_once ABSPATH . 'wp-admin/includes/update.php';
require_once ABSPATH . 'wp-admin/includes/file.php';

/** Merges $over into the canned daemon's /v1/status until the test ends. */
function fake_status(array $over): void {
    $f = env('FAKE_DIR') . '/status.json';
    file_put_contents($f, json_encode($over));
    cleanup(function () use ($f) { @unlink($f); });
    delete_transient(Askwpd_Admin::CACHE);
}
function rfc3339(int $t): string { return gmdate('Y-m-d\TH:i:s\Z', $t); }
/**
 * Sets the site's last webhook delivery, which the backlog test reads, until the test
 * ends: anything that publishes on the shared test site writes it.
 */
function last_delivery(bool $ok, string $error = ''): void {
    $old = get_option(Askwpd_Webhooks::DELIVERY_OPTION, null);
    cleanup(function () use ($old) {
        $old === null ? delete_option(Askwpd_Webhooks::DELIVERY_OPTION) : update_option(Askwpd_Webhooks::DELIVERY_OPTION, $old);
    });
    update_option(Askwpd_Webhooks::DELIVERY_OPTION, array('ok' => $ok, 'at' => time() - 300, 'status' => $ok ? 202 : 0, 'error' => $error));
}
function health_results(): array {
    $out = array();
    foreach (Askwpd_Health::TESTS as $id) {
        $out[$id] = Askwpd_Health::run($id);
    }
    return $out;
}
function statuses(array $results): array {
    return array_map(function ($r) { return $r['status']; }, $results);
}
function as_admin(): void {
    wp_set_current_user(1);
    cleanup(function () { wp_set_current_user(0); });
}
/** A clean run and an empty event queue, as a healthy daemon reports them. */
function healthy_status(): array {
    return array(
        'last_crawl' => array('kind' => 'incremental', 'finished_at' => rfc3339(time() - 3600), 'errors' => 0, 'fetched' => 8, 'indexed' => 3, 'removed' => 1),
        'errors' => array(),
        'freshness' => array('pending_events' => 0, 'failed_events' => 0, 'last_event_applied' => rfc3339(time() - 600)),
    );
}

test('site health: seven async tests, each with a REST route and a direct callback', function () {
    $tests = WP_Site_Health::get_tests();
    foreach (Askwpd_Health::TESTS as $id) {
        $name = 'askwpd_' . str_replace('-', '_', $id);
        ok(isset($tests['async'][$name]), "no async test $name");
        $t = $tests['async'][$name];
        eq($t['has_rest'] ?? null, true, "$name has_rest");
        eq($t['test'], rest_url('askwpd-companion/v1/site-health/' . $id), "$name REST URL");
        ok(is_callable($t['async_direct_test']), "$name async_direct_test");
        ok(!isset($tests['direct'][$name]), "$name must not be a direct test: it waits on the daemon");
    }
});

test('site health: a healthy daemon passes all seven, in-process and over REST', function () {
    as_admin();
    fake_status(healthy_status());
    last_delivery(true);
    $tests = WP_Site_Health::get_tests();
    foreach (Askwpd_Health::TESTS as $id) {
        $name = 'askwpd_' . str_replace('-', '_', $id);
        $r = call_user_func($tests['async'][$name]['async_direct_test']);
        eq($r['status'], 'good', "$id: " . wp_strip_all_tags($r['description']));
        eq($r['test'], $name, "$id: test name");
        foreach (array('label', 'badge', 'description', 'actions') as $k) {
            ok(isset($r[$k]), "$id result lacks $k");
        }
        $res = rest_do_request(new WP_REST_Request('GET', '/askwpd-companion/v1/site-health/' . $id));
        eq($res->get_status(), 200, "$id over REST");
        eq($res->get_data()['status'], 'good', "$id over REST");
    }
    wp_set_current_user(0);
    $res = rest_do_request(new WP_REST_Request('GET', '/askwpd-companion/v1/site-health/daemon'));
    eq($res->get_status(), 401, 'a visitor may not run the tests');
});

test('site health: stale index, a pass with errors and a backlog are recommendations', function () {
    fake_status(array(
        'last_crawl' => array('kind' => 'full', 'finished_at' => rfc3339(time() - 3 * DAY_IN_SECONDS), 'errors' => 2, 'error' => ''),
        'runs' => array(),
        'errors' => array(array('url' => 'http://example.test/<broken>/', 'http_status' => 500, 'error' => 'server error <b>')),
        'freshness' => array('pending_events' => 3, 'failed_events' => 1, 'oldest_pending_event' => rfc3339(time() - 2 * HOUR_IN_SECONDS), 'last_event_applied' => rfc3339(time() - 3 * DAY_IN_SECONDS)),
    ));
    $r = health_results();
    eq(statuses($r), array('daemon' => 'good', 'secrets' => 'good', 'freshness' => 'recommended', 'last-pass' => 'recommended', 'backlog' => 'recommended', 'provider' => 'good', 'store' => 'good'), 'statuses');
    ok(strpos($r['freshness']['description'], 'last refreshed 3 days ago') !== false, 'freshness names the age: ' . $r['freshness']['description']);
    ok(strpos($r['last-pass']['description'], '2 errors') !== false, 'errors counted');
    ok(strpos($r['last-pass']['description'], 'http://example.test/&lt;broken&gt;/') !== false && strpos($r['last-pass']['description'], '<b>') === false, 'error URLs listed, escaped');
    ok(strpos($r['backlog']['description'], 'waiting in the daemon: 3; failed: 1') !== false, 'backlog counts: ' . $r['backlog']['description']);
    ok(strpos($r['backlog']['description'], 'The oldest has waited 2 hours') !== false, 'backlog age');

    // The canned status of an older daemon: no event queue, no finished pass but one long ago.
    fake_status(array('freshness' => null));
    last_delivery(true);
    $r = Askwpd_Health::run('backlog');
    eq($r['status'], 'good', 'an unreported queue is not a problem');
    ok(strpos($r['description'], 'does not report its event queue') !== false, 'but it is said');

    // The site's own side: its last notification did not get through.
    fake_status(healthy_status());
    last_delivery(false, 'Connection refused <x>');
    $r = Askwpd_Health::run('backlog');
    eq($r['status'], 'recommended', 'a failed delivery');
    // The age in WordPress's own words for 300 s ("5 mins" in 6.1, "5 minutes" in 7.1).
    $ago = esc_html(human_time_diff(time() - 300));
    ok(strpos($r['description'], "failed $ago ago: Connection refused &lt;x&gt;.") !== false, 'names the failure: ' . $r['description']);
});

test('site health: a store being healed is critical; one healed lately is a recommendation naming the kept file', function () {
    fake_status(array('store' => array('healthy' => false, 'path' => '/var/lib/askwpd/askwpd.db', 'problem' => 'store: /var/lib/askwpd/askwpd.db was deleted while serving <x>')));
    $r = Askwpd_Health::run('store');
    eq($r['status'], 'critical', 'a store being healed');
    ok(strpos($r['description'], 'was deleted while serving &lt;x&gt;') !== false, 'names the damage, escaped: ' . $r['description']);
    $kept = '/var/lib/askwpd/askwpd.db.corrupt-20261202T160000Z';
    fake_status(array('store' => array('healthy' => true, 'last_heal' => array('at' => rfc3339(time() - 3600), 'cause' => 'corrupt',
        'damaged_file' => $kept, 'salvaged' => array('questions' => 41, 'events' => 2)))));
    $r = Askwpd_Health::run('store');
    eq($r['status'], 'recommended', 'a store healed an hour ago');
    ok(strpos($r['description'], 'found its store corrupt and healed it') !== false, 'says what happened: ' . $r['description']);
    ok(strpos($r['description'], 'question log: 41') !== false, 'says what was kept');
    ok(strpos($r['description'], "kept at $kept") !== false, 'names the kept file');
    fake_status(array('store' => array('healthy' => true, 'last_heal' => array('at' => rfc3339(time() - 30 * DAY_IN_SECONDS), 'cause' => 'corrupt'))));
    eq(Askwpd_Health::run('store')['status'], 'good', 'a heal a month ago');
});

test('site health: a down daemon is critical with the fix; the rest cannot tell', function () {
    use_daemon(array('url' => env('DEAD_URL')) + fake_daemon());
    $r = health_results();
    eq(statuses($r), array('daemon' => 'critical', 'secrets' => 'good', 'freshness' => 'recommended', 'last-pass' => 'recommended', 'backlog' => 'recommended', 'provider' => 'recommended', 'store' => 'recommended'), 'statuses');
    ok(strpos($r['daemon']['description'], 'systemctl start askwpd') !== false, 'the fix: ' . $r['daemon']['description']);
    ok(strpos($r['daemon']['description'], esc_html(env('DEAD_URL'))) !== false, 'names the URL');
    ok(strpos($r['freshness']['description'], 'cannot be checked until the askwpd daemon answers') !== false, 'dependent tests say why');
});

test('site health: against the real daemon, its /v1/status is understood', function () {
    use_daemon(real_daemon());
    $r = health_results();
    eq($r['daemon']['status'], 'good', 'daemon');
    ok(strpos($r['backlog']['description'], 'does not report') === false, 'the real daemon reports its event queue: ' . $r['backlog']['description']);
    ok(preg_match('/waiting in the daemon: \d+; failed: \d+/', $r['backlog']['description']) === 1, 'backlog counts');
    eq($r['store']['status'], 'good', 'the real daemon reports a sound store: ' . $r['store']['description']);
    $info = apply_filters('debug_information', array());
    ok(is_numeric($info['askwpd-companion']['fields']['documents']['value']), 'documents: ' . var_export($info['askwpd-companion']['fields']['documents']['value'], true));
    ok($info['askwpd-companion']['fields']['daemon_version']['value'] !== 'not reported', 'version');
});

test('secrets: unreadable, missing, and the chgrp/chmod fix', function () {
    $s = array('state_dir' => '/var/lib/askwpd', 'token' => '', 'secret' => '');
    $p = Askwpd_Settings::secret_problems($s, function ($path) { return 'unreadable_dir'; });
    eq(count($p), 1, 'one directory, one problem');
    eq($p[0]['message'], 'askwpd cannot read /var/lib/askwpd/token: the web server is not allowed to.', 'message');
    eq($p[0]['fix'], 'Run sudo chgrp www-data /var/lib/askwpd /var/lib/askwpd/token /var/lib/askwpd/webhook.secret && sudo chmod 0750 /var/lib/askwpd && sudo chmod 0640 /var/lib/askwpd/token /var/lib/askwpd/webhook.secret', 'fix');
    $p = Askwpd_Settings::secret_problems($s, function ($path) { return 'unreadable'; });
    eq(array_column($p, 'file'), array('/var/lib/askwpd/token', '/var/lib/askwpd/webhook.secret'), 'each unreadable file');
    eq(Askwpd_Settings::secret_problems(array('token' => 'set', 'secret' => 'set') + $s, function () { return 'unreadable'; }), array(), 'secrets given otherwise need no file');

    // The real probe, on real files (the tests run as root, who reads everything, so
    // "unreadable" is covered by the stub above only).
    $dir = sys_get_temp_dir() . '/askwpd-secrets-' . wp_generate_password(6, false);
    cleanup(function () use ($dir) { @unlink("$dir/token"); @unlink("$dir/webhook.secret"); @rmdir($dir); });
    eq(Askwpd_Settings::probe("$dir/token"), 'missing_dir', 'no dir');
    mkdir($dir, 0750);
    eq(Askwpd_Settings::probe("$dir/token"), 'missing', 'no file');
    file_put_contents("$dir/token", "\n");
    eq(Askwpd_Settings::probe("$dir/token"), 'empty', 'empty file');
    file_put_contents("$dir/token", "0123456789abcdef\n");
    eq(Askwpd_Settings::probe("$dir/token"), 'ok', 'readable');

    use_daemon(array('token' => '', 'secret' => '', 'state_dir' => $dir));
    $r = Askwpd_Health::run('secrets');
    eq($r['status'], 'recommended', 'webhook.secret missing');
    ok(strpos($r['description'], esc_html("$dir/webhook.secret") . ' does not exist yet.') !== false, 'names the file: ' . $r['description']);
    ok(strpos($r['description'], 'systemctl start askwpd') !== false, 'and the fix');
});

test('site health Info: an AskWP section, without secrets', function () {
    fake_status(healthy_status());
    $t0 = microtime(true);
    $info = WP_Debug_Data::debug_data();
    $ms = (microtime(true) - $t0) * 1000;
    ok(isset($info['askwpd-companion']), 'section present');
    $f = $info['askwpd-companion']['fields'];
    ok(preg_match('#^' . preg_quote(env('FAKE_URL'), '#') . ' \((default|option|constant)\)$#', $f['url']['value']) === 1, 'URL and its source: ' . $f['url']['value']);
    eq($f['documents']['value'], '1234', 'documents');
    ok(preg_match('/^set \(from: \w+\)$/', $f['token']['value']) === 1, 'token source only: ' . $f['token']['value']);
    ok(strpos(serialize($info['askwpd-companion']), 'fake-token') === false, 'the token is never shown');
    ok(strpos(serialize($info['askwpd-companion']), 'fake-secret') === false, 'the secret is never shown');
    $text = WP_Debug_Data::format($info, 'debug');
    ok(strpos($text, '### askwpd-companion ###') !== false, 'in the copied report');
    printf("      WP_Debug_Data::debug_data() took %.0f ms\n", $ms);
});

test('admin notices: on the Dashboard, a down daemon and unreadable secrets, with the fix', function () {
    as_admin();
    set_current_screen('dashboard');
    cleanup(function () { $GLOBALS['current_screen'] = null; });
    $notices = function () { ob_start(); Askwpd_Admin::notices(); return ob_get_clean(); };

    eq($notices(), '', 'nothing when all is well');
    // No delete_transient here: a state cached for another daemon must not be reused.
    $GLOBALS['askwpd_override'] = array('url' => env('DEAD_URL'), 'token' => '', 'secret' => '', 'state_dir' => '/nonexistent/askwpd');
    Askwpd_Settings::reset();
    $html = $notices();
    eq(substr_count($html, 'askwpd-notice-secrets'), 1, 'a missing directory is one notice');
    ok(strpos($html, 'askwpd-notice-daemon') !== false && strpos($html, 'systemctl start askwpd') !== false, 'daemon notice with its fix: ' . $html);
    ok(strpos($html, 'askwpd-notice-secrets') !== false && strpos($html, 'define ASKWPD_STATE_DIR in wp-config.php') !== false, 'secrets notice with its fix');
    ok(strpos($html, 'page=askwpd-index') !== false, 'links the status page');

    set_current_screen('edit-post');
    eq($notices(), '', 'not on every screen');
    set_current_screen('dashboard');
    wp_set_current_user(0);
    eq($notices(), '', 'not for those who cannot fix it');
});

/** Cookies and a nonce for the admin, through a real session. */
function admin_session(string $nonce_action): array {
    $exp = time() + HOUR_IN_SECONDS;
    $token = WP_Session_Tokens::get_instance(1)->create($exp);
    cleanup(function () use ($token) { WP_Session_Tokens::get_instance(1)->destroy($token); });
    $logged_in = wp_generate_auth_cookie(1, $exp, 'logged_in', $token);
    $auth = wp_generate_auth_cookie(1, $exp, 'auth', $token);
    $_COOKIE[LOGGED_IN_COOKIE] = $logged_in;
    wp_set_current_user(1);
    $nonce = wp_create_nonce($nonce_action);
    unset($_COOKIE[LOGGED_IN_COOKIE]);
    wp_set_current_user(0);
    return array('Cookie: ' . AUTH_COOKIE . '=' . rawurlencode($auth) . '; ' . LOGGED_IN_COOKIE . '=' . rawurlencode($logged_in), $nonce);
}

test('settings API: the page posts to options.php, which saves through sanitize()', function () {
    $old = get_option(Askwpd_Settings::OPTION, null);
    cleanup(function () use ($old) {
        $old === null ? delete_option(Askwpd_Settings::OPTION) : update_option(Askwpd_Settings::OPTION, $old);
        Askwpd_Settings::reset();
    });
    site_config(array());
    update_option(Askwpd_Settings::OPTION, array('url' => '', 'state_dir' => '', 'token' => 'kept-token', 'secret' => 'old-secret'));
    list($cookie, $nonce) = admin_session(Askwpd_Settings::GROUP . '-options');

    $page = http('GET', admin_url('tools.php?page=askwpd-index'), null, array($cookie));
    eq($page['status'], 200, 'the page');
    foreach (array('action="' . admin_url('options.php') . '"', 'name="askwpd_companion_settings[url]"', 'name="askwpd_companion_settings[clear_secret]"', 'name="askwpd_companion_settings[form]" value="1"') as $want) {
        ok(strpos($page['body'], $want) !== false, "page lacks $want");
    }
    ok(preg_match('/name=[\'"]option_page[\'"] value=[\'"]askwpd_companion[\'"]/', $page['body']) === 1, 'page lacks the option group');

    $form = array(
        'option_page' => Askwpd_Settings::GROUP, 'action' => 'update', '_wpnonce' => $nonce,
        '_wp_http_referer' => '/wp-admin/tools.php?page=askwpd-index',
        'askwpd_companion_settings' => array('form' => '1', 'url' => ' http://127.0.0.1:9998/ ', 'state_dir' => '/srv/askwpd<x>', 'token' => '', 'secret' => '', 'clear_secret' => '1'),
    );
    $r = http('POST', admin_url('options.php'), http_build_query($form), array($cookie, 'Content-Type: application/x-www-form-urlencoded'));
    eq($r['status'], 302, 'saved and redirected: ' . substr($r['body'], 0, 200));
    ok(strpos($r['headers']['location'] ?? '', 'page=askwpd-index') !== false && strpos($r['headers']['location'], 'settings-updated=true') !== false, 'back to the page: ' . ($r['headers']['location'] ?? ''));
    wp_cache_delete('alloptions', 'options');
    wp_cache_delete(Askwpd_Settings::OPTION, 'options');
    eq(get_option(Askwpd_Settings::OPTION), array('url' => 'http://127.0.0.1:9998/', 'state_dir' => '/srv/askwpd', 'token' => 'kept-token', 'secret' => ''), 'sanitized: blank token kept, secret cleared');

    $form['_wpnonce'] = 'forged';
    $form['askwpd_companion_settings']['url'] = 'http://evil.test';
    $r = http('POST', admin_url('options.php'), http_build_query($form), array($cookie, 'Content-Type: application/x-www-form-urlencoded'));
    eq($r['status'], 403, 'a bad nonce is refused');
    wp_cache_delete('alloptions', 'options');
    wp_cache_delete(Askwpd_Settings::OPTION, 'options');
    eq(get_option(Askwpd_Settings::OPTION)['url'], 'http://127.0.0.1:9998/', 'and nothing saved');

    // Outside the form, update_option() stores what it is given: a restore can clear.
    update_option(Askwpd_Settings::OPTION, array('url' => '', 'state_dir' => '', 'token' => '', 'secret' => ''));
    eq(get_option(Askwpd_Settings::OPTION)['token'], '', 'a programmatic update is taken as given');
});

test('secrets: as the web server\'s user, the fix the notice names makes them readable', function () {
    if (!function_exists('posix_geteuid') || posix_geteuid() !== 0 || !is_executable('/usr/bin/setpriv') || !posix_getpwnam('www-data')) {
        echo "      skipped: needs root, setpriv and a www-data user\n";
        return;
    }
    // An older daemon's layout: a 0700 dir of 0600 files, owned by another user.
    $dir = '/tmp/askwpd-perm-' . wp_generate_password(6, false);
    cleanup(function () use ($dir) { exec('rm -rf ' . escapeshellarg($dir)); });
    mkdir($dir, 0700);
    foreach (array('token', 'webhook.secret') as $f) {
        file_put_contents("$dir/$f", "0123456789abcdef0123456789abcdef\n");
        chmod("$dir/$f", 0600);
    }
    // A copy www-data can read wherever the checkout is.
    $settings = "$dir-settings.php";
    copy(dirname(__DIR__) . '/includes/class-askwpd-settings.php', $settings);
    chmod($settings, 0644);
    cleanup(function () use ($settings) { @unlink($settings); });
    $probe = function (string $file) use ($settings) {
        $php = 'define("ABSPATH", "/"); require $argv[1]; echo Askwpd_Settings::probe($argv[2]), " ", Askwpd_Settings::web_group();';
        exec('/usr/bin/setpriv --reuid=www-data --regid=www-data --init-groups php -r ' . escapeshellarg($php) . ' '
            . escapeshellarg($settings) . ' ' . escapeshellarg($file) . ' 2>&1', $out, $rc);
        return implode("\n", $out);
    };
    eq($probe("$dir/token"), 'unreadable_dir www-data', 'a 0700 dir, as www-data');
    chmod($dir, 0755);
    eq($probe("$dir/token"), 'unreadable www-data', 'a 0600 file, as www-data');

    $fix = str_replace('sudo ', '', Askwpd_Settings::permission_fix($dir));
    exec($fix . ' 2>&1', $out, $rc);
    eq($rc, 0, "the fix ran: $fix " . implode("\n", $out));
    eq($probe("$dir/token"), 'ok www-data', 'token readable after the fix');
    eq($probe("$dir/webhook.secret"), 'ok www-data', 'webhook.secret readable after the fix');
    eq(decoct(fileperms($dir) & 0777), '750', 'dir mode');
    eq(decoct(fileperms("$dir/token") & 0777), '640', 'file mode');
});
