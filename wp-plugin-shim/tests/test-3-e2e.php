<?php
/**
 * End to end with the real askwpd (started by run.sh on a temporary state dir) and a
 * scripted LLM: webhooks from WordPress's own PHP API and from REST reach the daemon
 * signed and the index follows; AskWP's two endpoints answer from the daemon's chat.
 */

/** Sends what is queued to the real daemon, as shutdown would. */
function flush_real(): array {
    use_daemon(real_daemon());
    $res = Askwpd_Webhooks::flush();
    ok(is_array($res) && count($res) >= 1, 'nothing was sent');
    eq($res[0]['status'], 202, 'daemon accepted the batch: ' . $res[0]['body'] . $res[0]['error']);
    return $res;
}

test('e2e: publish, update, privatize, trash through PHP; the index follows within 1 s', function () {
    use_daemon(real_daemon());
    $w1 = marker('Shimpub');
    $id = new_post(array('post_title' => "$w1 harbour notes", 'post_content' => "<p>The $w1 harbour opens at dawn.</p>"));
    flush_real();
    $t = wait_for(function () use ($id, $w1) { return strpos((string) indexed_title($id), $w1) !== false; }, 1.0);
    ok($t >= 0, 'published post not indexed within 1 s');
    printf("      published → indexed in %.0f ms\n", $t * 1000);

    $w2 = marker('Shimupd');
    wp_update_post(array('ID' => $id, 'post_title' => "$w2 harbour notes"));
    flush_real();
    $t = wait_for(function () use ($id, $w2) { return strpos((string) indexed_title($id), $w2) !== false; }, 1.0);
    ok($t >= 0, 'update not indexed within 1 s');
    printf("      updated → reindexed in %.0f ms\n", $t * 1000);

    wp_update_post(array('ID' => $id, 'post_status' => 'private'));
    flush_real();
    $t = wait_for(function () use ($id) { return indexed_title($id) === null; }, 1.0);
    ok($t >= 0, 'privatized post still in the index after 1 s');
    printf("      privatized → removed in %.0f ms\n", $t * 1000);

    wp_update_post(array('ID' => $id, 'post_status' => 'publish'));
    flush_real();
    ok(wait_for(function () use ($id) { return indexed_title($id) !== null; }, 1.0) >= 0, 'republished post not back within 1 s');
    wp_trash_post($id);
    flush_real();
    $t = wait_for(function () use ($id) { return indexed_title($id) === null; }, 1.0);
    ok($t >= 0, 'trashed post still in the index after 1 s');
    printf("      trashed → removed in %.0f ms\n", $t * 1000);
});

test('e2e: a post created and deleted through REST reaches the daemon at shutdown', function () {
    site_real();
    $user = get_user_by('login', 'admin');
    ok($user, 'no admin user');
    list($pw, $item) = WP_Application_Passwords::create_new_application_password($user->ID, array('name' => 'askwpd-shim-test'));
    cleanup(function () use ($user, $item) { WP_Application_Passwords::delete_application_password($user->ID, $item['uuid']); });
    $auth = 'Authorization: Basic ' . base64_encode('admin:' . $pw);
    $w = marker('Shimrest');
    $r = http('POST', rest_url('wp/v2/posts'), json_encode(array('title' => "$w lighthouse", 'content' => "<p>$w lighthouse keeper log.</p>", 'status' => 'publish')), array('Content-Type: application/json', $auth));
    eq($r['status'], 201, 'REST create: ' . substr($r['body'], 0, 200));
    $id = (int) json_decode($r['body'], true)['id'];
    cleanup(function () use ($id) { wp_delete_post($id, true); });
    $t = wait_for(function () use ($id, $w) { return strpos((string) indexed_title($id), $w) !== false; }, 1.0);
    ok($t >= 0, 'REST-published post not indexed within 1 s of the response');
    printf("      REST publish → indexed %.0f ms after the response\n", $t * 1000);

    $r = http('DELETE', rest_url("wp/v2/posts/$id?force=true"), null, array($auth));
    eq($r['status'], 200, 'REST delete');
    $t = wait_for(function () use ($id) { return indexed_title($id) === null; }, 1.0);
    ok($t >= 0, 'REST-deleted post still indexed after 1 s');
    printf("      REST delete → removed %.0f ms after the response\n", $t * 1000);
});

test('e2e: a forged or replayed webhook is refused', function () {
    $d = real_daemon();
    $body = json_encode(array('events' => array(array('id' => wp_generate_uuid4(), 'type' => 'menu_changed'))));
    $ts = (string) time();
    $send = function ($sig, $ts) use ($d, $body) {
        return http('POST', $d['url'] . '/v1/events', $body, array('Content-Type: application/json', "X-Askwpd-Timestamp: $ts", "X-Askwpd-Signature: $sig"))['status'];
    };
    eq($send(Askwpd_Webhooks::sign($body, $ts, 'not-the-secret'), $ts), 401, 'bad signature');
    $old = (string) (time() - 3600);
    eq($send(Askwpd_Webhooks::sign($body, $old, $d['secret']), $old), 401, 'stale timestamp');
    eq($send(Askwpd_Webhooks::sign($body, $ts, $d['secret']), $ts), 202, 'good signature');
    eq($send(Askwpd_Webhooks::sign($body, $ts, $d['secret']), $ts), 401, 'replayed id');
});

test('e2e: AskWP REST and stream answered by the daemon\'s chat, with sources', function () {
    use_daemon(real_daemon());
    $w = marker('Shimchat');
    $content = "<p>The $w ferry leaves every hour from pier four, between six in the morning and ten at night.</p>"
        . "<p>Tickets for the $w ferry are sold at the kiosk on the pier and on board. A single crossing costs four euros, a return seven; children under twelve travel free.</p>"
        . "<p>On Sundays and public holidays the $w ferry runs every two hours. In storms the harbour master may cancel crossings; notices are posted at the kiosk and on this page.</p>"
        . "<p>Bicycles are welcome on the $w ferry at no extra cost, but cars are not carried. The crossing takes about twenty-five minutes in calm weather.</p>";
    $id = new_post(array('post_title' => "$w ferry timetable", 'post_content' => $content));
    flush_real();
    ok(wait_for(function () use ($id) { return indexed_title($id) !== null; }, 2.0) >= 0, 'post not indexed');
    $url = get_permalink($id);

    site_real();
    $r = http('POST', rest_url('askwp/v1/chat'), chat_body("When does the $w ferry leave?"), array('Content-Type: application/json'), 60);
    eq($r['status'], 200, 'REST status: ' . substr($r['body'], 0, 300));
    $d = json_decode($r['body'], true);
    eq(array_keys($d), array('reply', 'sources', 'action', 'usage'), 'AskWP keys');
    ok(is_string($d['reply']) && $d['reply'] !== '', 'a reply');
    eq($d['action'], null, 'action');
    ok(in_array($url, array_column($d['sources'], 'url'), true), "sources name $url: " . json_encode($d['sources']));
    foreach ($d['sources'] as $s) {
        eq(array_keys($s), array('title', 'url'), 'source keys');
    }

    $r = http('POST', admin_url('admin-ajax.php?action=askwp_stream_chat'), chat_body("When does the $w ferry leave?", array('stream_id' => 's1')), array('Content-Type: application/json'), 60);
    ok(strpos($r['headers']['content-type'] ?? '', 'text/event-stream') === 0, 'stream content type');
    $ev = sse_data($r['body']);
    eq(end($ev), '[DONE]', 'ends with [DONE]: ' . substr($r['body'], -300));
    $deltas = '';
    $done = null;
    foreach ($ev as $e) {
        if (is_array($e) && isset($e['delta'])) {
            $deltas .= $e['delta'];
        }
        if (is_array($e) && !empty($e['done'])) {
            $done = $e;
        }
        ok($e === '[DONE]' || (is_array($e) && count(array_intersect(array_keys($e), array('status', 'delta', 'error', 'done'))) === 1), 'AskWP event: ' . json_encode($e));
    }
    ok($deltas !== '', 'deltas: ' . substr($r['body'], 0, 500));
    ok($done !== null, 'a done event: ' . substr($r['body'], 0, 500));
    ok(in_array($url, array_column($done['sources'], 'url'), true), 'stream sources name the post: ' . json_encode($done['sources']));
});
