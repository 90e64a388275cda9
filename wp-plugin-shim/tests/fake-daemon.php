<?php
/**
 * A canned daemon for the shim's unit tests: it answers the routes the shim calls with
 * fixed bodies in the daemon's wire format and records what the shim sent, so that the
 * mapping onto AskWP's format is checked byte for byte. The end-to-end tests use the
 * real daemon instead.
 *
 *   FAKE_DIR=/tmp/x php -S 127.0.0.1:PORT fake-daemon.php
 *
 * Token: "fake-token". $FAKE_DIR/slow makes /v1/status and /v1/tools/* take 3 s;
 * $FAKE_DIR/status.json, when present, is merged over the canned /v1/status
 * (array_replace_recursive). /v1/tools/* otherwise fails as a broken daemon does (500).
 * A chat whose last message holds NOPROVIDER gets the daemon's no_provider error: 503, or
 * a stream of one error event.
 */

$dir = getenv('FAKE_DIR') ?: sys_get_temp_dir();
$path = parse_url($_SERVER['REQUEST_URI'] ?? '/', PHP_URL_PATH);
$method = $_SERVER['REQUEST_METHOD'];
$auth = ($_SERVER['HTTP_AUTHORIZATION'] ?? '') === 'Bearer fake-token';
$json = function ($status, $v) {
    http_response_code($status);
    header('Content-Type: application/json');
    echo json_encode($v, JSON_UNESCAPED_SLASHES);
    return true;
};

if ($path === '/healthz') {
    return $json(200, array('status' => 'ok'));
}
if ($path === '/v1/events' && $method === 'POST') {
    $n = count(glob("$dir/events-*.json")) + 1;
    file_put_contents(sprintf('%s/events-%03d.json', $dir, $n), json_encode(array(
        'timestamp' => $_SERVER['HTTP_X_ASKWPD_TIMESTAMP'] ?? '',
        'signature' => $_SERVER['HTTP_X_ASKWPD_SIGNATURE'] ?? '',
        'authorization' => $_SERVER['HTTP_AUTHORIZATION'] ?? '',
        'body' => file_get_contents('php://input'),
    )));
    return $json(202, array('accepted' => true));
}
if (!$auth) {
    return $json(401, array('error' => array('code' => 'unauthorized', 'message' => 'unauthorized')));
}
if ($path === '/v1/status') {
    if (file_exists("$dir/slow")) {
        sleep(3);
    }
    $status = array(
        'site' => array('url' => 'http://example.test'), 'version' => 'fake-1',
        'index' => array('documents' => 1234, 'chunks' => 5678, 'thin' => 9, 'by_type' => array('post' => 1200, 'page' => 34)),
        'last_crawl' => array('id' => 7, 'kind' => 'incremental', 'started_at' => '2026-01-01T00:00:00Z', 'finished_at' => '2026-01-01T00:01:00Z',
            'discovered' => 10, 'fetched' => 8, 'indexed' => 3, 'unchanged' => 5, 'removed' => 1, 'errors' => 2),
        'errors' => array(array('url' => 'http://example.test/broken/', 'status' => 'error', 'http_status' => 500, 'error' => 'fetch: server error <b>')),
        'crawling' => false, 'database' => 'ok',
        'observability' => array(
            'retrieval' => array('searches' => 40, 'latency_p50_ms' => 3.25, 'latency_p95_ms' => 11.5),
            'freshness_lag_seconds' => 7200, 'queue' => array('pending' => 4, 'indexed' => 1200, 'error' => 2),
            'history' => array(array('at' => '2026-01-01T00:00:00Z')),
        ),
    );
    $over = is_file("$dir/status.json") ? json_decode((string) file_get_contents("$dir/status.json"), true) : null;
    return $json(200, is_array($over) ? array_replace_recursive($status, $over) : $status);
}
if (strpos($path, '/v1/tools/') === 0 && $method === 'POST') {
    if (file_exists("$dir/slow")) {
        sleep(3);
    }
    return $json(500, array('error' => array('code' => 'internal', 'message' => 'internal error')));
}
if ($path === '/admin/reindex' && $method === 'POST') {
    header('Location: /admin?reindex=started', true, 303);
    return true;
}
if ($path === '/v1/chat' && $method === 'POST') {
    $raw = file_get_contents('php://input');
    file_put_contents("$dir/chat-last.json", $raw);
    $req = json_decode($raw, true);
    $last = end($req['messages']);
    if (strpos($last['content'], 'BUSY429') !== false) {
        header('Retry-After: 7');
        return $json(429, array('error' => array('code' => 'busy', 'message' => 'the assistant is answering 8 questions already; try again in a few seconds', 'retry_after' => 7)));
    }
    if (strpos($last['content'], 'NOPROVIDER') !== false) {
        $err = array('code' => 'no_provider', 'message' => "no LLM provider is configured: set [provider] in askwpd's configuration, or choose a provider in AskWP's settings");
        if (strpos($_SERVER['HTTP_ACCEPT'] ?? '', 'text/event-stream') !== false) {
            header('Content-Type: text/event-stream');
            echo "event: error\ndata: " . json_encode($err, JSON_UNESCAPED_SLASHES) . "\n\n";
            return true;
        }
        return $json(503, array('error' => $err));
    }
    if (strpos($last['content'], 'FAIL503') !== false) {
        return $json(503, array('error' => array('code' => 'unavailable', 'message' => 'no provider')));
    }
    $sources = array(
        array('title' => 'Refund policy', 'url' => 'http://example.test/refunds/', 'quote' => 'Refunds within 30 days.', 'start' => 10, 'end' => 33),
        array('title' => 'Refund policy', 'url' => 'http://example.test/refunds/', 'quote' => 'Second passage.', 'start' => 50, 'end' => 65),
        array('title' => '', 'url' => 'http://example.test/faq/', 'quote' => 'FAQ.', 'start' => 0, 'end' => 4),
    );
    $usage = array('input_tokens' => 120, 'output_tokens' => 30);
    if (strpos($_SERVER['HTTP_ACCEPT'] ?? '', 'text/event-stream') !== false) {
        header('Content-Type: text/event-stream');
        header('Cache-Control: no-cache');
        $ev = function ($name, $data) {
            echo "event: $name\ndata: " . json_encode($data, JSON_UNESCAPED_SLASHES) . "\n\n";
            @ob_flush();
            flush();
            usleep(20000);
        };
        $ev('status', array('status' => 'Searching the site'));
        if (strpos($last['content'], 'MIDERROR') !== false) {
            $ev('delta', array('delta' => 'Partial '));
            $ev('error', array('error' => 'provider failed'));
            return true;
        }
        $ev('delta', array('delta' => 'Refunds are accepted '));
        $ev('delta', array('delta' => "within 30 days \"quoted\" \u{e9}."));
        $ev('done', array('reply' => "Refunds are accepted within 30 days \"quoted\" \u{e9}.", 'sources' => $sources, 'usage' => $usage));
        return true;
    }
    return $json(200, array(
        'reply' => "Refunds are accepted within 30 days \"quoted\" \u{e9}.", 'sources' => $sources,
        'evidence' => true, 'usage' => $usage, 'tool_calls' => 1, 'latency_ms' => 12,
    ));
}
return $json(404, array('error' => array('code' => 'not_found', 'message' => 'Not Found')));
