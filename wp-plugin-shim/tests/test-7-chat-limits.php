<?php
/**
 * The chat's limits: the shim's atomic rate limit under concurrent requests to the real
 * site, and the daemon's 429s (its cap on turns at once, its daily budget of model calls)
 * passed on to the widget.
 */

/**
 * Sends $n requests to AskWP's REST route, $parallel at a time, from separate PHP workers
 * of the site; returns the count of each status.
 */
function burst(int $n, int $parallel, string $body): array {
    $codes = array_count_values(curl_parallel($n, $parallel, function () use ($body) {
        $ch = curl_init(rest_url('askwp/v1/chat'));
        curl_setopt_array($ch, array(CURLOPT_POST => true, CURLOPT_POSTFIELDS => $body, CURLOPT_RETURNTRANSFER => true,
            CURLOPT_HTTPHEADER => array('Content-Type: application/json', 'Expect:'), CURLOPT_TIMEOUT => 30));
        return $ch;
    }));
    ksort($codes);
    return $codes;
}

test('rate limit: 100 requests, 4 at a time, let exactly the limit (20 per 60 s) through', function () {
    site_fake(array('ASKWPD_CHAT_RATE_LIMIT' => '20/60'));
    foreach (array(1, 2) as $round) {
        Askwpd_Chat::reset_hits(Askwpd_Chat::ip_key());
        // Invalid bodies: each counts, and none waits on a daemon, so they overlap the most.
        $codes = burst(100, 4, '{"messages":[]}');
        printf("      round %d: %s\n", $round, json_encode($codes));
        eq($codes, array(400 => 20, 429 => 80), "round $round: exactly 20 through");
    }
    Askwpd_Chat::reset_hits(Askwpd_Chat::ip_key());
    $codes = burst(40, 8, chat_body('Refunds?'));
    printf("      valid chats, 8 at a time: %s\n", json_encode($codes));
    eq($codes, array(200 => 20, 429 => 20), 'valid chats, 8 at a time: exactly 20 through');
});

test('rate limit: a window ends, and a new one starts at the next request', function () {
    $key = 'askwpd_rl_test_' . wp_generate_password(8, false);
    cleanup(function () use ($key) { Askwpd_Chat::reset_hits($key); });
    global $wpdb;
    $got = array();
    $errs = array();
    for ($i = 0; $i < 3; $i++) {
        $got[] = Askwpd_Chat::hit($key, 2);
        $errs[] = $wpdb->last_error;
    }
    eq($got, array(1, 2, 3), 'counts up (database errors: ' . json_encode($errs) . ')');
    sleep(3);
    eq(array(Askwpd_Chat::hit($key, 2), Askwpd_Chat::hit($key, 2)), array(1, 2), 'a new window');
});

test('rate limit: with a persistent object cache, its incr counts', function () {
    // WordPress's own cache stands in for memcached or Redis here: it shows which calls
    // the limit makes (add, then incr), not their atomicity, which is the cache's.
    $key = 'askwpd_rl_cache_' . wp_generate_password(8, false);
    $was = wp_using_ext_object_cache(true);
    cleanup(function () use ($was, $key) { wp_using_ext_object_cache($was); Askwpd_Chat::reset_hits($key); });
    eq(array(Askwpd_Chat::hit($key, 60), Askwpd_Chat::hit($key, 60), Askwpd_Chat::hit($key, 60)), array(1, 2, 3), 'counts up');
    eq(wp_cache_get($key, 'askwpd_rate'), 3, 'in the cache');
    global $wpdb;
    eq((int) $wpdb->get_var($wpdb->prepare('SELECT COUNT(*) FROM ' . Askwpd_Outbox::counters_table() . ' WHERE name = %s', $key)), 0, 'not in the table');
});

test('chat: the daemon\'s 429 reaches the widget, friendly, with Retry-After', function () {
    site_fake();
    $r = askwp_rest(chat_body('BUSY429'));
    eq($r['status'], 429, 'REST status');
    eq($r['headers']['retry-after'] ?? '', '7', 'REST Retry-After');
    eq(json_decode($r['body'], true)['message'] ?? '', 'The assistant is busy answering other visitors. Please try again in a few seconds.', 'REST message');
    $r = askwp_stream(with_stream_id('BUSY429'), array('Accept: text/event-stream'));
    eq(array($r['status'], $r['headers']['retry-after'] ?? ''), array(429, '7'), 'stream status and Retry-After');
    eq(sse_data($r['body']), array(array('error' => 'The assistant is busy answering other visitors. Please try again in a few seconds.'), '[DONE]'), 'stream error event');
    $r = http('POST', rest_url('askwpd-companion/v1/chat'), chat_body('BUSY429'), array('Content-Type: application/json'));
    eq(array($r['status'], $r['headers']['retry-after'] ?? ''), array(429, '7'), 'companion route');
});

test('chat: a real daemon past its daily budget answers 429; the widget is told to come back tomorrow', function () {
    $state = sys_get_temp_dir() . '/askwpd-budget-' . wp_generate_password(8, false);
    mkdir($state, 0700);
    cleanup(function () use ($state) { rm_tree($state); @unlink("$state.log"); });
    $port = free_port();
    $proc = own_daemon_start($state, $port, array('chat.daily_model_calls=1', 'provider.kind=openai-compatible',
        'provider.base_url=' . env('LLM_URL'), 'provider.model=test', 'provider.api_key=x'));
    cleanup(function () use ($proc) { own_daemon_stop($proc); });
    $d = own_daemon_settings($state, $port);
    site_config(array('ASKWPD_URL' => $d['url'], 'ASKWPD_STATE_DIR' => $state));
    $codes = array();
    for ($i = 0; $i < 4 && !in_array(429, $codes, true); $i++) {
        $r = askwp_rest(chat_body('What is on this site?'));
        $codes[] = $r['status'];
    }
    eq(end($codes), 429, 'the budget ran out: ' . json_encode($codes));
    eq(json_decode($r['body'], true)['message'] ?? '', 'The assistant has answered all the questions it can for today. Please come back tomorrow.', 'message');
    $ra = (int) ($r['headers']['retry-after'] ?? 0);
    $midnight = strtotime('tomorrow 00:00 UTC');
    ok($ra > 0 && abs(time() + $ra - $midnight) <= 5, "Retry-After $ra s is midnight UTC");
    $st = json_decode(http('GET', $d['url'] . '/v1/status', null, array('Authorization: Bearer ' . $d['token']))['body'], true);
    eq(array($st['chat']['model_calls_today'] ?? null, $st['chat']['daily_model_calls'] ?? null), array(1, 1), '/v1/status shows the budget');
});
