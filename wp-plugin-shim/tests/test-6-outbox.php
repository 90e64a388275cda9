<?php
/**
 * The outbox: events the daemon did not take, kept and resent. The outage test starts,
 * stops and restarts an askwpd of its own (ASKWPD_BIN, from run.sh) on a state dir of its
 * own; the helpers for that serve test-7 too.
 */

/** Starts askwpd on $state at 127.0.0.1:$port; returns the process. */
function own_daemon_start(string $state, int $port, array $sets = array()): array {
    $cmd = array(env('ASKWPD_BIN'), 'serve', '--wp-root', env('WP_ROOT'), '--site-url', env('SITE_URL'),
        '--state-dir', $state, '--listen', "127.0.0.1:$port",
        '--set', 'schedule.disabled=true', '--set', 'crawl.budget=1',
        '--set', 'crawl.rate_per_sec=200', '--set', 'crawl.concurrency=8');
    foreach ($sets as $kv) {
        array_push($cmd, '--set', $kv);
    }
    $log = fopen("$state.log", 'a');
    $p = proc_open($cmd, array(0 => array('file', '/dev/null', 'r'), 1 => $log, 2 => $log), $pipes);
    ok(is_resource($p), 'askwpd did not start');
    $up = wait_for(function () use ($port) { return http('GET', "http://127.0.0.1:$port/healthz", null, array(), 1)['status'] === 200; }, 15.0);
    ok($up >= 0, "askwpd did not come up; log:\n" . implode("\n", array_slice(file("$state.log"), -10)));
    return array('proc' => $p, 'log' => $log);
}
function own_daemon_stop(array $d): void {
    proc_terminate($d['proc'], 15);
    proc_close($d['proc']); // Waits: the daemon shuts down gracefully on SIGTERM.
    fclose($d['log']);
}
function free_port(): int {
    $s = stream_socket_server('tcp://127.0.0.1:0');
    $port = (int) substr(strrchr(stream_socket_get_name($s, false), ':'), 1);
    fclose($s);
    return $port;
}
/** The shim's settings for a daemon on this port and state dir, secrets read as a site reads them. */
function own_daemon_settings(string $state, int $port): array {
    $r = Askwpd_Settings::resolve(array('ASKWPD_URL' => "http://127.0.0.1:$port", 'ASKWPD_STATE_DIR' => $state), array(), array('Askwpd_Settings', 'read_secret_file'));
    ok($r['token'] !== '' && $r['secret'] !== '', "no secrets in $state");
    return array('url' => $r['url'], 'token' => $r['token'], 'secret' => $r['secret']);
}
/** The title a daemon has indexed for a post ID, or null when it has none. */
function title_at(array $d, int $id): ?string {
    $r = http('POST', $d['url'] . '/v1/tools/get_document', json_encode(array('id_or_url' => (string) $id)), array('Authorization: Bearer ' . $d['token'], 'Content-Type: application/json'), 10);
    $b = json_decode($r['body'], true);
    return $r['status'] === 200 && is_array($b) ? (string) ($b['title'] ?? $b['document']['title'] ?? '') : null;
}
/** The outbox's state as the database has it now, whoever wrote it. */
function outbox_state_now(): array {
    wp_cache_delete('alloptions', 'options');
    wp_cache_delete('notoptions', 'options');
    wp_cache_delete(Askwpd_Outbox::STATE_OPTION, 'options');
    return Askwpd_Outbox::state();
}
function outbox_rows(): int {
    global $wpdb;
    return (int) $wpdb->get_var('SELECT COUNT(*) FROM ' . Askwpd_Outbox::table());
}
/**
 * Waits for the suite's shared daemon to stop crawling (its start, or a menu event in an
 * earlier test, begins a pass). Each page it fetches ends in the outbox's shutdown hook,
 * which drains the outbox when it is due: rows a test counts would go out under it.
 */
function shared_daemon_idle(): void {
    $shared = real_daemon();
    wait_for(function () use ($shared) {
        $st = json_decode(http('GET', $shared['url'] . '/v1/status', null, array('Authorization: Bearer ' . $shared['token']), 5)['body'], true);
        return is_array($st) && empty($st['crawling']);
    }, 30.0);
}
function rm_tree(string $dir): void {
    if (is_dir($dir)) {
        exec('rm -rf ' . escapeshellarg($dir));
    }
}

test('outbox: a failed send is kept, one row per post, and resent as one batch', function () {
    shared_daemon_idle();
    use_daemon(array('url' => env('DEAD_URL'), 'secret' => 'fake-secret'));
    $a = new_post(array('post_title' => 'Outbox A'));
    $b = new_post(array('post_title' => 'Outbox B'));
    $res = Askwpd_Webhooks::flush();
    eq($res[0]['status'], 0, 'the daemon is down');
    eq(outbox_rows(), 2, 'both events kept');
    $s = Askwpd_Outbox::state();
    eq(array($s['depth'], $s['fails']), array(2, 1), 'depth and failures');
    ok($s['next'] > time(), 'the next attempt waits its backoff');
    ok(wp_next_scheduled(Askwpd_Outbox::CRON_HOOK) !== false, 'WP-Cron will retry');

    // While events wait, new ones join them: one row per post, the newest event wins.
    wp_update_post(array('ID' => $a, 'post_title' => 'Outbox A2'));
    eq(Askwpd_Webhooks::flush(), array(), 'not due: nothing is tried');
    eq(outbox_rows(), 2, 'the update replaced the waiting event for the same post');
    $c = new_post(array('post_title' => 'Outbox C', 'post_status' => 'draft'));
    wp_trash_post($b);
    Askwpd_Webhooks::flush();
    eq(outbox_rows(), 3, 'a new post adds a row; the trash replaces B\'s');

    // The daemon is back and the backoff is over: the next request's shutdown drains.
    use_daemon(fake_daemon());
    clear_fake_events();
    update_option(Askwpd_Outbox::STATE_OPTION, array('next' => 0) + Askwpd_Outbox::state());
    ok(Askwpd_Outbox::due(), 'due');
    $res = Askwpd_Outbox::drain();
    eq(array_column($res, 'status'), array(202), 'one batch');
    eq(outbox_rows(), 0, 'emptied');
    eq(Askwpd_Outbox::state()['depth'], 0, 'depth 0');
    $got = fake_events();
    eq(count($got), 1, 'one request');
    $g = $got[0];
    eq($g['signature'], Askwpd_Webhooks::sign($g['body'], $g['timestamp'], 'fake-secret'), 'signed');
    $evs = json_decode($g['body'], true)['events'];
    $by = array_column($evs, 'type', 'post_id');
    ksort($by);
    eq($by, array($a => 'post_updated', $b => 'post_trashed', $c => 'post_unpublished'), 'each post\'s last state');
    ok(wp_next_scheduled(Askwpd_Outbox::CRON_HOOK) === false || Askwpd_Outbox::depth() === 0, 'nothing left to retry');
});

test('outbox: a resent event the daemon already stored counts as delivered', function () {
    $d = real_daemon();
    shared_daemon_idle();
    use_daemon($d);
    // The daemon stores an event, but the shim never hears back (a timeout, say).
    $id = new_post(array('post_title' => marker('Replayed')));
    $events = Askwpd_Webhooks::build_events();
    Askwpd_Webhooks::clear();
    eq(Askwpd_Webhooks::send($events)['status'], 202, 'stored by the daemon');
    // Not due until this test drains: a page the daemon fetches meanwhile would drain the
    // outbox at its shutdown, and the rows counted below would be gone.
    update_option(Askwpd_Outbox::STATE_OPTION, array('next' => time() + 3600) + Askwpd_Outbox::state());
    Askwpd_Outbox::add($events);
    $other = new_post(array('post_title' => marker('Fresh')));
    Askwpd_Outbox::add(Askwpd_Webhooks::build_events());
    Askwpd_Webhooks::clear();
    eq(outbox_rows(), 2, 'both wait');
    $res = Askwpd_Outbox::drain();
    $codes = array_column($res, 'status');
    eq($codes, array(401, 401, 202), 'the batch is refused as a replay, then each alone: replay, accepted');
    eq(outbox_rows(), 0, 'nothing is retried forever');
    eq(Askwpd_Outbox::state()['fails'], 0, 'not a failure');
    ok(wait_for(function () use ($d, $other) { return title_at($d, $other) !== null; }, 5.0) >= 0, 'the fresh event was applied');
    unset($id);
});

test('outbox: bounded; past the bound, events are counted, shown, and a full reindex covers them', function () {
    add_filter('askwpd_outbox_max_rows', $cap = function () { return 3; });
    cleanup(function () use ($cap) { remove_filter('askwpd_outbox_max_rows', $cap); });
    use_daemon(array('url' => env('DEAD_URL'), 'secret' => 'fake-secret') + fake_daemon());
    $ids = array();
    for ($i = 0; $i < 5; $i++) {
        $ids[] = new_post(array('post_title' => "Bound $i"));
        Askwpd_Webhooks::flush();
    }
    eq(outbox_rows(), 3, 'at most the bound');
    eq(Askwpd_Outbox::state()['overflow'], 2, 'two events counted past the bound');
    wp_update_post(array('ID' => $ids[0], 'post_title' => 'Bound 0 again'));
    Askwpd_Webhooks::flush();
    eq(array(outbox_rows(), Askwpd_Outbox::state()['overflow']), array(3, 2), 'a post already waiting still takes its newest event');

    $h = Askwpd_Health::run('backlog');
    ok(strpos($h['description'], 'full') !== false && $h['status'] !== 'good', 'Site Health says the outbox is full: ' . $h['description']);
    ob_start();
    Askwpd_Admin::render_outbox();
    $html = ob_get_clean();
    ok(strpos($html, 'askwpd-outbox') !== false && strpos($html, '3') !== false, 'the admin page shows the depth: ' . $html);

    use_daemon(fake_daemon());
    clear_fake_events();
    update_option(Askwpd_Outbox::STATE_OPTION, array('next' => 0) + Askwpd_Outbox::state());
    $res = Askwpd_Outbox::drain();
    eq(array_column($res, 'status'), array(202), 'drained');
    $s = Askwpd_Outbox::state();
    eq(array($s['depth'], $s['overflow']), array(0, 0), 'drained, and the reindex that covers the lost events was asked for');
});

/**
 * The outage: the daemon is stopped, 50 posts are published, updated and trashed through
 * WordPress's PHP API, and the daemon starts again. With $catch_up off the changes reach
 * it only as the outbox's events; on, it also reads them from the database as it starts
 * (schedule.catch_up, the shipped default).
 */
function outage(bool $catch_up): void {
    // Its fetches would also compete with this test's for the site's PHP workers.
    shared_daemon_idle();
    $state = sys_get_temp_dir() . '/askwpd-outbox-' . wp_generate_password(8, false);
    mkdir($state, 0700);
    cleanup(function () use ($state) { rm_tree($state); @unlink("$state.log"); });
    $port = free_port();
    // The crawl's rate and concurrency as shipped (config.Default), not the other tests'
    // faster ones: the event re-renders are paced by them.
    $conc = 4;
    $shipped = array('crawl.rate_per_sec=8', "crawl.concurrency=$conc", 'schedule.catch_up=' . ($catch_up ? 'true' : 'false'));
    $proc = own_daemon_start($state, $port, $shipped);
    $running = true;
    cleanup(function () use (&$proc, &$running) { if ($running) { own_daemon_stop($proc); } });
    $d = own_daemon_settings($state, $port);
    use_daemon($d);
    site_config(array('ASKWPD_URL' => $d['url'], 'ASKWPD_STATE_DIR' => $state));

    // 30 posts the daemon indexes while it is up: 15 to update, 15 to trash.
    $existing = array();
    for ($i = 0; $i < 30; $i++) {
        $existing[] = new_post(array('post_title' => marker('Obx') . " before $i", 'post_content' => "<p>Outbox test page $i.</p>"));
    }
    $res = Askwpd_Webhooks::flush();
    eq(array_column($res, 'status'), array(202), 'the 30 were sent');
    $t = wait_for(function () use ($d, $existing) {
        foreach ($existing as $id) {
            if (title_at($d, $id) === null) {
                return false;
            }
        }
        return true;
    }, 60.0);
    ok($t >= 0, 'the 30 posts were not indexed within 60 s');

    own_daemon_stop($proc);
    $running = false;

    // The outage: 50 changes, each flushed as its own request would.
    $want = array(); // post ID => title, or null for "not in the index"
    for ($i = 0; $i < 20; $i++) {
        $title = marker('Obxnew') . " $i";
        $id = new_post(array('post_title' => $title, 'post_content' => "<p>Published while the daemon was down, $i.</p>"));
        Askwpd_Webhooks::flush();
        $want[$id] = $title;
    }
    for ($i = 0; $i < 15; $i++) {
        $title = marker('Obxupd') . " $i";
        wp_update_post(array('ID' => $existing[$i], 'post_title' => $title));
        Askwpd_Webhooks::flush();
        $want[$existing[$i]] = $title;
    }
    for ($i = 15; $i < 30; $i++) {
        wp_trash_post($existing[$i]);
        Askwpd_Webhooks::flush();
        $want[$existing[$i]] = null;
    }
    eq(count($want), 50, '50 posts changed');
    eq(outbox_rows(), 50, 'one waiting event per post');
    $before = outbox_state_now();
    ok($before['fails'] >= 1 && $before['error'] !== '', 'the failures are recorded');
    $t0 = microtime(true);
    $proc = own_daemon_start($state, $port, $shipped);
    $running = true;
    $up = microtime(true) - $t0;

    // Visitors come and go; their requests' shutdown sends the backlog once its backoff
    // allows. Meanwhile, the daemon's answers are checked post by post.
    // Once the backlog is out, only the daemon is watched, so the time is measured close.
    // The first attempt after the restart is the shim's send: a batch the daemon stores
    // after the drain's timeout is reflected all the same, and resent as a replay. An
    // attempt refused while the daemon was starting, by a request already under way (a
    // page the suite's daemon fetches, WP-Cron), is no send: the outbox backs off, and
    // the send is its next attempt.
    $left = $want;
    $visits = 0;
    $sent = 0.0;
    $refused = false;
    $note = function (array $st) use ($t0, &$sent, &$refused) {
        if ($st['tried_at'] <= $t0 || ($sent !== 0.0 && $st['tried_at'] >= $sent)) {
            return;
        }
        if ($st['drained_at'] < $st['tried_at'] && preg_match('/Failed to connect|Couldn.t connect/i', $st['error'])) {
            $refused = true;
            return;
        }
        $sent = (float) $st['tried_at'];
    };
    $reflected = function (int $id, ?string $title) use ($d): bool {
        $got = title_at($d, $id);
        return $title === null ? $got === null : $got !== null && strpos($got, $title) !== false;
    };
    // Done when all 50 are reflected and the backlog went out: with the catch-up, the
    // first may come before the second.
    $done = 0.0;
    $all = wait_for(function () use ($t0, $note, $reflected, &$left, &$visits, &$done, &$sent) {
        $st = outbox_state_now();
        $note($st);
        if ($st['drained_at'] <= $t0) {
            http('GET', home_url('/?askwpd_visit=' . $visits++), null, array(), 10);
            $note(outbox_state_now());
        }
        // Up to the first change not reflected yet: asking for all 50 every 20 ms took
        // a core of this machine's two from the site's PHP workers the daemon waits on.
        foreach ($left as $id => $title) {
            if (!$reflected($id, $title)) {
                return false;
            }
            unset($left[$id]);
        }
        if ($done === 0.0) {
            $done = microtime(true);
        }
        return $sent !== 0.0;
    }, 60.0);
    if ($done === 0.0) {
        $done = microtime(true);
    }
    if ($all < 0) {
        // The poll stopped at the first one missing: say which all are.
        $left = array_filter($left, function ($title, $id) use ($reflected) { return !$reflected($id, $title); }, ARRAY_FILTER_USE_BOTH);
    }
    $after = outbox_state_now();
    ok($all >= 0, count($left) . ' of 50 changes not reflected 60 s after the daemon started: ' . json_encode(array_slice($left, 0, 5, true)) . ' outbox ' . json_encode($after));
    eq(outbox_rows(), 0, 'the outbox is empty');
    ok($sent > $t0, sprintf('the backlog went out after the restart (t0 %.3f): %s', $t0, json_encode($after)));
    $since_start = $done - $t0;
    $since_send = $done - $sent;
    printf("      50 changes during the outage; outbox 50 rows, %d failed attempts, backoff %d s\n", $before['fails'], max(0, $before['next'] - (int) $t0));
    printf("      daemon up in %.2f s; all 50 reflected %.2f s after its start, %.2f s %s the shim's send (%d visits%s)\n", $up, $since_start, abs($since_send), $since_send < 0 ? 'before' : 'after', $visits, $refused ? ", after an attempt refused during the start" : '');
    // Where the time goes: the daemon re-rendering the 35 pages.
    $why = $catch_up ? 'Re-rendered on catch-up' : 'Re-rendered on event';
    $renders = array(); // URL => when
    $floor = 0.0;
    foreach (file("$state.log") as $line) {
        $l = json_decode($line, true);
        if (!is_array($l) || ($l['msg'] ?? '') !== $why) {
            continue;
        }
        $at = (float) DateTime::createFromFormat('Y-m-d\TH:i:s.uP', preg_replace('/(\.\d{6})\d*/', '$1', $l['time']))->format('U.u');
        if ($at >= $t0) {
            $renders[$l['url']] = $at;
        }
    }
    if ($renders) {
        $from = $catch_up ? $t0 : $sent;
        printf("      the daemon re-rendered %d pages from %.2f to %.2f s after %s\n", count($renders), min($renders) - $from, max($renders) - $from, $catch_up ? 'its start' : 'the send');
        // What the site itself takes to render the same pages, as many at a time as the
        // daemon fetches (crawl.concurrency): no daemon can reflect them sooner.
        $urls = array_keys($renders);
        $r0 = microtime(true);
        $codes = curl_parallel(count($urls), $conc, function ($i) use ($urls) {
            $ch = curl_init($urls[$i]);
            curl_setopt_array($ch, array(CURLOPT_RETURNTRANSFER => true, CURLOPT_TIMEOUT => 30));
            return $ch;
        });
        $floor = microtime(true) - $r0;
        eq(array_unique($codes), array(200), 'the re-rendered pages answer 200');
        printf("      the site alone renders those %d pages in %.2f s, %d at a time\n", count($urls), $floor, $conc);
    }
    ok($since_start <= 60.0, sprintf('%.1f s after the start', $since_start));
    printf("      the shim's last drain took %.1f ms (%s)\n", $after['drain_ms'], $after['tried_at'] > $sent ? 'a resend, after a first attempt timed out' : 'the first attempt');
    ok($after['drain_ms'] <= 1000, sprintf('sending the backlog took %.0f ms', $after['drain_ms']));
    // The rest is the daemon re-rendering 35 pages through the site's PHP workers, which
    // on a quiet test machine takes about a second; 5 s catches a regression. A loaded
    // machine slows the site's own renders as much as the daemon's, so the bound grows
    // by what the site alone took just now.
    $bound = 5.0 + 2 * $floor;
    ok($since_send <= $bound, sprintf('%.2f s after the send (bound %.1f s)', $since_send, $bound));
    if ($catch_up) {
        // From the database alone, the daemon's start is the clock. A send that comes
        // early re-renders some of the 35 itself; the catch-up then leaves them out.
        ok(count($renders) > 0, 'nothing was re-rendered on catch-up');
        ok($since_start <= $bound, sprintf('%.2f s after the start (bound %.1f s)', $since_start, $bound));
    }
}

test('outbox: daemon down, 50 posts published, updated and trashed; all reflected after it returns', function () {
    outage(false);
});

test('catch-up: daemon down, 50 posts changed; it reads them from the database as it starts', function () {
    outage(true);
});

test('outbox: a request that looked for the state before it existed does not wipe it', function () {
    global $wpdb;
    // This request asks before any state exists: WordPress remembers the miss.
    eq(get_option(Askwpd_Outbox::STATE_OPTION), false, 'no state yet');
    // Meanwhile another request drains the backlog and records it.
    $other = array('depth' => 0, 'next' => 0, 'fails' => 0, 'error' => '', 'overflow' => 0,
        'drained_at' => 1234.5, 'drain_ms' => 12.0, 'tried_at' => 1234.5);
    $wpdb->insert($wpdb->options, array('option_name' => Askwpd_Outbox::STATE_OPTION, 'option_value' => serialize($other), 'autoload' => 'yes'));
    // This request's own drain finds nothing left to send, and saves the state.
    eq(Askwpd_Outbox::drain(), array(), 'nothing to send');
    $raw = $wpdb->get_var($wpdb->prepare("SELECT option_value FROM $wpdb->options WHERE option_name = %s", Askwpd_Outbox::STATE_OPTION));
    $got = maybe_unserialize($raw);
    eq(array($got['tried_at'] ?? null, $got['drained_at'] ?? null), array(1234.5, 1234.5), 'the other drain\'s record survives');
});

test('outbox: WP-Cron retries when its time comes, and not before', function () {
    // An earlier test's retry, overdue by now, would be kept as the earlier one.
    wp_clear_scheduled_hook(Askwpd_Outbox::CRON_HOOK);
    use_daemon(array('url' => env('DEAD_URL'), 'secret' => 'fake-secret'));
    $t0 = time();
    $id = new_post(array('post_title' => 'Outbox cron'));
    Askwpd_Webhooks::flush();
    eq(outbox_rows(), 1, 'kept');
    $when = wp_next_scheduled(Askwpd_Outbox::CRON_HOOK);
    ok($when !== false && $when >= $t0 && $when >= (int) Askwpd_Outbox::state()['next'], 'a retry is scheduled at the backoff');
    use_daemon(fake_daemon());
    clear_fake_events();
    do_action(Askwpd_Outbox::CRON_HOOK);
    eq(array(outbox_rows(), count(fake_events())), array(1, 0), 'too early: nothing sent, the row stays');
    update_option(Askwpd_Outbox::STATE_OPTION, array('next' => 0) + Askwpd_Outbox::state());
    do_action(Askwpd_Outbox::CRON_HOOK);
    eq(outbox_rows(), 0, 'sent by the cron event');
    $evs = json_decode(fake_events()[0]['body'], true)['events'];
    eq(array_column($evs, 'post_id'), array($id), 'the post\'s event');
});
