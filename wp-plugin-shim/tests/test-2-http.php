<?php
/**
 * The chat proxy from the outside: HTTP requests to the real test WordPress, with the
 * shim pointed (through the test mu-plugin) at the canned daemon, a closed port, or a
 * daemon that fails.
 */

function askwp_rest(string $body, array $headers = array()): array {
    return http('POST', rest_url('askwp/v1/chat'), $body, array_merge(array('Content-Type: application/json'), $headers));
}
function askwp_stream(string $body, array $headers = array()): array {
    return http('POST', admin_url('admin-ajax.php?action=askwp_stream_chat'), $body, array_merge(array('Content-Type: application/json'), $headers));
}
function with_stream_id(string $q): string {
    return chat_body($q, array('stream_id' => 'sid-1'));
}

test('AskWP REST: served from the daemon in AskWP\'s shape', function () {
    site_fake();
    $r = askwp_rest(chat_body('What is the refund policy?'));
    eq($r['status'], 200, 'status: ' . $r['body']);
    eq(json_decode($r['body'], true), array(
        'reply' => "Refunds are accepted within 30 days \"quoted\" \u{e9}.",
        'sources' => array(array('title' => 'Refund policy', 'url' => 'http://example.test/refunds/'), array('title' => 'http://example.test/faq/', 'url' => 'http://example.test/faq/')),
        'action' => null,
        'usage' => array('input_tokens' => 120, 'output_tokens' => 30),
    ), 'body');
    $sent = json_decode(file_get_contents(env('FAKE_DIR') . '/chat-last.json'), true);
    eq($sent, array('messages' => array(array('role' => 'user', 'content' => 'What is the refund policy?')), 'page_url' => home_url('/'), 'page_title' => 'Home'), 'what the daemon got');
});

test('AskWP stream: daemon SSE mapped to AskWP lines, then [DONE]', function () {
    site_fake();
    $r = askwp_stream(with_stream_id('Refunds?'));
    eq($r['status'], 200, 'status');
    ok(strpos($r['headers']['content-type'] ?? '', 'text/event-stream') === 0, 'content type: ' . ($r['headers']['content-type'] ?? ''));
    eq(sse_data($r['body']), array(
        array('status' => 'Searching the site'),
        array('delta' => 'Refunds are accepted '),
        array('delta' => "within 30 days \"quoted\" \u{e9}."),
        array('done' => true, 'sources' => array(array('title' => 'Refund policy', 'url' => 'http://example.test/refunds/'), array('title' => 'http://example.test/faq/', 'url' => 'http://example.test/faq/')), 'usage' => array('input_tokens' => 120, 'output_tokens' => 30)),
        '[DONE]',
    ), 'events');
    foreach (preg_split("/\n\n/", trim($r['body'])) as $block) {
        ok(strpos($block, 'data: ') === 0 && strpos($block, "\n") === false, 'one data line per event: ' . $block);
    }
    ok($r['ttfb'] < $r['total'] - 0.03, sprintf('streamed, not buffered: first byte %.3f s, end %.3f s', $r['ttfb'], $r['total']));
});

test('AskWP stream: an error mid-stream becomes {"error"} and [DONE]', function () {
    site_fake();
    $r = askwp_stream(with_stream_id('MIDERROR please'));
    eq(sse_data($r['body']), array(array('status' => 'Searching the site'), array('delta' => 'Partial '), array('error' => 'provider failed'), '[DONE]'), 'events');
});

test('companion route: JSON and SSE passed through', function () {
    site_fake();
    foreach (array('askwpd-companion', 'askwp-companion') as $ns) {
        $r = http('POST', rest_url("$ns/v1/chat"), chat_body('Refunds?'), array('Content-Type: application/json'));
        eq($r['status'], 200, "$ns status");
        $d = json_decode($r['body'], true);
        eq(array($d['evidence'], $d['tool_calls'], $d['sources'][0]['quote'], $d['sources'][0]['start']), array(true, 1, 'Refunds within 30 days.', 10), "$ns: the daemon's reply, whole");
    }
    $r = http('POST', rest_url('askwpd-companion/v1/chat'), chat_body('Refunds?'), array('Content-Type: application/json', 'Accept: text/event-stream'));
    ok(strpos($r['headers']['content-type'] ?? '', 'text/event-stream') === 0, 'content type');
    ok(strpos($r['body'], "event: status\ndata: {\"status\":\"Searching the site\"}\n\n") === 0, 'bytes passed through: ' . substr($r['body'], 0, 80));
    ok(strpos($r['body'], "event: done\n") !== false, 'done event');
});

test('step aside: daemon down, no AskWP: the routes still answer, in format', function () {
    site_config(array('ASKWPD_URL' => env('DEAD_URL'), 'ASKWPD_TOKEN' => 'x'));
    $r = askwp_rest(chat_body('Hi'));
    eq($r['status'], 503, 'REST status');
    eq(json_decode($r['body'], true)['code'] ?? '', 'askwpd_unavailable', 'REST code');
    $r = askwp_stream(with_stream_id('Hi'));
    eq(sse_data($r['body']), array(array('error' => 'The assistant is unavailable right now.'), '[DONE]'), 'stream');
    $r = http('POST', rest_url('askwpd-companion/v1/chat'), chat_body('Hi'), array('Content-Type: application/json', 'Accept: text/event-stream'));
    eq($r['status'], 503, 'companion route');
});

test('step aside: daemon down or failing, AskWP present: AskWP answers', function () {
    foreach (array(
        'down' => array('ASKWPD_URL' => env('DEAD_URL'), 'ASKWPD_TOKEN' => 'x', 'askwp_standin' => true),
        'fail503' => array('ASKWPD_URL' => env('FAKE_URL'), 'ASKWPD_TOKEN' => 'fake-token', 'askwp_standin' => true),
        '401' => array('ASKWPD_URL' => env('FAKE_URL'), 'ASKWPD_TOKEN' => 'wrong', 'askwp_standin' => true),
    ) as $case => $cfg) {
        site_config($cfg);
        $q = $case === 'fail503' ? 'FAIL503' : 'Hi';
        $r = askwp_rest(chat_body($q));
        eq(array($r['status'], json_decode($r['body'], true)['reply'] ?? null), array(200, 'STANDIN'), "$case: REST answered by AskWP");
        $r = askwp_stream(with_stream_id($q));
        eq(sse_data($r['body']), array(array('delta' => 'STANDIN'), '[DONE]'), "$case: stream answered by AskWP");
    }
    site_fake(array('askwp_standin' => true));
    $r = askwp_rest(chat_body('Refunds?'));
    ok(strpos($r['body'], 'Refunds are accepted') !== false, 'daemon healthy: the shim serves even with AskWP present');
});

test('guards: origin, size cap, rate limit', function () {
    site_fake(array('ASKWPD_CHAT_RATE_LIMIT' => '5/60'));
    $r = askwp_rest(chat_body('Hi'), array('Origin: https://evil.example'));
    eq($r['status'], 403, 'foreign origin on REST');
    $r = askwp_stream(with_stream_id('Hi'), array('Origin: https://evil.example'));
    eq(array($r['status'], sse_data($r['body'])[0]['error'] ?? ''), array(403, 'Cross-origin chat requests are not allowed.'), 'foreign origin on the stream');
    $r = askwp_rest(chat_body('Refunds?'), array('Origin: ' . Askwpd_Chat::origin_of(home_url())));
    eq($r['status'], 200, 'own origin');
    $r = askwp_rest(chat_body(str_repeat('a', 70000)));
    eq($r['status'], 413, 'too large');
    $codes = array();
    for ($i = 0; $i < 6; $i++) {
        $codes[] = askwp_rest('{"messages":[]}')['status'];
    }
    eq($codes, array(400, 400, 400, 400, 429, 429), 'rate limit (the 200 above counted too)');
});
