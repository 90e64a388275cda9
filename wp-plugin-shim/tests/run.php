<?php
/**
 * The shim's test suite, run inside the real test WordPress (PHP CLI + wp-load.php) by
 * run.sh, which starts the daemons and writes the test mu-plugin first.
 *
 * Environment (from run.sh): SITE_URL, WP_ROOT, FAKE_URL, FAKE_DIR (a canned daemon),
 * DAEMON_URL, DAEMON_STATE (the real askwpd; its URL may be unix:/path), CONFIG_FILE (read by
 * the test mu-plugin on every request to the site), DEAD_URL (a closed port).
 *
 * Every test restores what it changes; the last line is "N passed, N failed".
 */

if (PHP_SAPI !== 'cli') {
    exit(1);
}
$site = rtrim((string) getenv('SITE_URL'), '/');
$u = parse_url($site);
$_SERVER['HTTP_HOST'] = $u['host'] . (isset($u['port']) ? ':' . $u['port'] : '');
$_SERVER['SERVER_NAME'] = $u['host'];
$_SERVER['REQUEST_URI'] = '/';
$_SERVER['REQUEST_METHOD'] = 'GET';
$_SERVER['REMOTE_ADDR'] = '127.0.0.1';
define('WP_USE_THEMES', false);
require rtrim((string) getenv('WP_ROOT'), '/') . '/wp-load.php';
require_once ABSPATH . 'wp-admin/includes/plugin.php';
require_once ABSPATH . 'wp-admin/includes/taxonomy.php';
require_once ABSPATH . 'wp-admin/includes/template.php';

if (!class_exists('Askwpd_Webhooks')) {
    fwrite(STDERR, "run.php: the askwpd-companion plugin is not active (run scripts/shim-up.sh)\n");
    exit(1);
}

final class TestFailure extends Exception {}

$GLOBALS['askwpd_tests'] = array();
$GLOBALS['askwpd_cleanups'] = array();
$GLOBALS['askwpd_override'] = array();

function test(string $name, callable $fn): void { $GLOBALS['askwpd_tests'][] = array($name, $fn); }
function cleanup(callable $fn): void { $GLOBALS['askwpd_cleanups'][] = $fn; }
function ok($cond, string $msg): void { if (!$cond) { throw new TestFailure($msg); } }
function eq($got, $want, string $msg): void {
    if ($got !== $want) {
        throw new TestFailure($msg . "\n      got:  " . var_export($got, true) . "\n      want: " . var_export($want, true));
    }
}
function env(string $k): string { return (string) getenv($k); }

/** Points the shim, in this process, at a daemon. */
function use_daemon(array $s): void {
    $GLOBALS['askwpd_override'] = $s;
    Askwpd_Settings::reset();
    delete_transient(Askwpd_Admin::CACHE);
}
add_filter('askwpd_settings', function ($s) { return array_merge($s, $GLOBALS['askwpd_override']); });

function fake_daemon(): array {
    return array('url' => env('FAKE_URL'), 'token' => 'fake-token', 'secret' => 'fake-secret');
}
/** The real daemon, found as a site finds it: its address and state dir, the secrets read by the shim. */
function real_daemon(): array {
    $r = Askwpd_Settings::resolve(array('ASKWPD_URL' => env('DAEMON_URL'), 'ASKWPD_STATE_DIR' => env('DAEMON_STATE')), array(), array('Askwpd_Settings', 'read_secret_file'));
    ok($r['source']['token'] === 'state_file' && $r['source']['secret'] === 'state_file',
        'the shim cannot read the secrets in ' . env('DAEMON_STATE') . ': ' . json_encode(Askwpd_Settings::secret_problems($r)));
    return array('url' => $r['url'], 'token' => $r['token'], 'secret' => $r['secret']);
}

/** Configures the shim inside the site's own PHP workers, through the test mu-plugin. */
function site_config(array $c): void {
    file_put_contents(env('CONFIG_FILE'), json_encode($c));
    Askwpd_Chat::reset_hits(Askwpd_Chat::ip_key());
}
function site_fake(array $extra = array()): void {
    site_config($extra + array('ASKWPD_URL' => env('FAKE_URL'), 'ASKWPD_TOKEN' => 'fake-token', 'ASKWPD_WEBHOOK_SECRET' => 'fake-secret'));
}
function site_real(array $extra = array()): void {
    site_config($extra + array('ASKWPD_URL' => env('DAEMON_URL'), 'ASKWPD_STATE_DIR' => env('DAEMON_STATE')));
}

/** An HTTP request (unix:/path/sock/v1/x goes through the socket); returns status, headers (lower-case names), body, ttfb and total seconds. */
function http(string $method, string $url, ?string $body = null, array $headers = array(), int $timeout = 60): array {
    $socket = '';
    if (strpos($url, 'unix:') === 0) {
        $sock_end = strpos($url, '.sock') + 5;
        $socket = substr($url, 5, $sock_end - 5);
        $url = 'http://localhost' . substr($url, $sock_end);
    }
    $ch = curl_init($url);
    if ($socket !== '') {
        curl_setopt($ch, CURLOPT_UNIX_SOCKET_PATH, $socket);
    }
    $h = array();
    curl_setopt_array($ch, array(
        CURLOPT_CUSTOMREQUEST => $method,
        CURLOPT_RETURNTRANSFER => true,
        CURLOPT_HTTPHEADER => array_merge(array('Expect:'), $headers),
        CURLOPT_TIMEOUT => $timeout,
        CURLOPT_HEADERFUNCTION => function ($ch, $line) use (&$h) {
            $p = explode(':', $line, 2);
            if (count($p) === 2) {
                $h[strtolower(trim($p[0]))] = trim($p[1]);
            }
            return strlen($line);
        },
    ));
    if ($body !== null) {
        curl_setopt($ch, CURLOPT_POSTFIELDS, $body);
    }
    $b = curl_exec($ch);
    $r = array(
        'status' => (int) curl_getinfo($ch, CURLINFO_RESPONSE_CODE), 'headers' => $h, 'body' => (string) $b,
        'ttfb' => curl_getinfo($ch, CURLINFO_STARTTRANSFER_TIME), 'total' => curl_getinfo($ch, CURLINFO_TOTAL_TIME),
        'error' => curl_error($ch),
    );
    return $r;
}
/**
 * Runs $n curl requests, $parallel at a time: $make($i) returns the i-th handle. Returns each
 * one's HTTP status, by $i.
 */
function curl_parallel(int $n, int $parallel, callable $make): array {
    $mh = curl_multi_init();
    $codes = array();
    $sent = 0;
    $at = array(); // handle id => $i
    $add = function () use ($mh, $make, &$sent, &$at) {
        $ch = $make($sent);
        $at[spl_object_id($ch)] = $sent++;
        curl_multi_add_handle($mh, $ch);
    };
    while ($sent < min($parallel, $n)) {
        $add();
    }
    $running = 0;
    do {
        curl_multi_exec($mh, $running);
        curl_multi_select($mh, 0.05);
        while ($info = curl_multi_info_read($mh)) {
            $codes[$at[spl_object_id($info['handle'])]] = (int) curl_getinfo($info['handle'], CURLINFO_RESPONSE_CODE);
            curl_multi_remove_handle($mh, $info['handle']);
            if ($sent < $n) {
                $add();
                $running++;
            }
        }
    } while ($running > 0 || count($codes) < $n);
    curl_multi_close($mh);
    ksort($codes);
    return $codes;
}
function chat_body(string $q, array $extra = array()): string {
    return json_encode($extra + array(
        'messages' => array(array('role' => 'user', 'content' => $q)),
        'page_url' => home_url('/'), 'page_title' => 'Home',
    ));
}
/** The data: payloads of an SSE body, decoded (except [DONE]). */
function sse_data(string $body): array {
    $out = array();
    foreach (preg_split("/\r?\n\r?\n/", trim($body)) as $block) {
        if (strpos($block, 'data: ') !== 0) {
            continue;
        }
        $raw = substr($block, 6);
        $out[] = $raw === '[DONE]' ? '[DONE]' : json_decode($raw, true);
    }
    return $out;
}
function fake_events(): array {
    $out = array();
    foreach (glob(env('FAKE_DIR') . '/events-*.json') as $f) {
        $out[] = json_decode(file_get_contents($f), true);
    }
    return $out;
}
function clear_fake_events(): void {
    foreach (glob(env('FAKE_DIR') . '/events-*.json') as $f) {
        unlink($f);
    }
}
/** The post meta that marks a post this suite made with the PID of the run that made it. */
const TEST_RUN_META = '_askwpd_test_run';
function new_post(array $args): int {
    $id = wp_insert_post($args + array('post_status' => 'publish', 'post_type' => 'post', 'post_content' => 'Body.'), true);
    ok(!is_wp_error($id), 'wp_insert_post: ' . (is_wp_error($id) ? $id->get_error_message() : ''));
    add_post_meta($id, TEST_RUN_META, (string) getmypid());
    cleanup(function () use ($id) { wp_delete_post($id, true); Askwpd_Webhooks::flush(); });
    return $id;
}
/**
 * Deletes the posts of runs that died before their cleanups: the lab database is shared,
 * and the host comparison that follows this suite in scripts/test.sh counts every public
 * post. A run still alive keeps its posts.
 */
function remove_dead_runs_posts(): void {
    global $wpdb;
    $rows = $wpdb->get_results($wpdb->prepare("SELECT post_id, meta_value FROM $wpdb->postmeta WHERE meta_key = %s", TEST_RUN_META));
    $gone = array();
    foreach ($rows as $r) {
        $pid = (int) $r->meta_value;
        if ($pid > 0 && $pid !== getmypid() && !file_exists("/proc/$pid")) {
            wp_delete_post((int) $r->post_id, true);
            $gone[$pid] = ($gone[$pid] ?? 0) + 1;
        }
    }
    foreach ($gone as $pid => $n) {
        printf("removed %d posts left by an earlier run (pid %d) that stopped before its cleanups\n", $n, $pid);
    }
    Askwpd_Webhooks::clear();
}
/** The real daemon's tool call. */
function tool(string $name, array $args): array {
    $d = real_daemon();
    $r = http('POST', $d['url'] . '/v1/tools/' . $name, json_encode($args), array('Authorization: Bearer ' . $d['token'], 'Content-Type: application/json'), 10);
    return array($r['status'], json_decode($r['body'], true));
}
/** Polls until $fn returns true or $secs pass; returns the seconds it took, or -1. */
function wait_for(callable $fn, float $secs): float {
    $t0 = microtime(true);
    do {
        if ($fn()) {
            return microtime(true) - $t0;
        }
        usleep(20000);
    } while (microtime(true) - $t0 < $secs);
    return -1.0;
}
function indexed_title(int $id): ?string {
    list($st, $d) = tool('get_document', array('id_or_url' => (string) $id));
    return $st === 200 && is_array($d) ? (string) ($d['title'] ?? $d['document']['title'] ?? '') : null;
}
function marker(string $p): string { return $p . strtoupper(wp_generate_password(8, false)); }

foreach (glob(__DIR__ . '/test-*.php') as $f) {
    require $f;
}

// ---------------------------------------------------------------------------------------
$only = getenv('ONLY') ?: '';
remove_dead_runs_posts();
$pass = 0;
$fail = 0;
foreach ($GLOBALS['askwpd_tests'] as list($name, $fn)) {
    if ($only !== '' && strpos($name, $only) === false) {
        continue;
    }
    $t0 = microtime(true);
    $err = null;
    try {
        use_daemon(fake_daemon());
        Askwpd_Webhooks::clear();
        Askwpd_Outbox::clear();
        $fn();
    } catch (Throwable $e) {
        $err = $e instanceof TestFailure ? $e->getMessage() : get_class($e) . ': ' . $e->getMessage() . ' at ' . $e->getFile() . ':' . $e->getLine();
    }
    foreach (array_reverse($GLOBALS['askwpd_cleanups']) as $c) {
        try {
            $c();
        } catch (Throwable $e) {
            $err = ($err ? "$err; " : '') . 'cleanup: ' . $e->getMessage();
        }
    }
    $GLOBALS['askwpd_cleanups'] = array();
    Askwpd_Webhooks::clear();
    $ms = (microtime(true) - $t0) * 1000;
    if ($err === null) {
        $pass++;
        printf("ok    %-58s %7.0f ms\n", $name, $ms);
    } else {
        $fail++;
        printf("FAIL  %-58s %7.0f ms\n      %s\n", $name, $ms, $err);
    }
}
delete_option(Askwpd_Webhooks::DELIVERY_OPTION);
delete_transient(Askwpd_Admin::CACHE);
Askwpd_Outbox::clear();
printf("%d passed, %d failed\n", $pass, $fail);
exit($fail ? 1 : 0);
