<?php
/**
 * askwpd's read tools as WordPress abilities (6.9+), against the real WordPress and the
 * real daemon: what wp_get_abilities() lists, execute(), the REST run endpoint over HTTP
 * with an application password, bad input, who may run them, and a daemon that is down,
 * slow or refusing. On WordPress before 6.9 the plugin registers none and still works.
 */

require_once ABSPATH . 'wp-admin/includes/user.php';

/** Skips a test (with the reason printed) where there is no Abilities API. */
function needs_abilities(): bool {
    if (function_exists('wp_register_ability')) {
        return true;
    }
    printf("      skipped: WordPress %s has no Abilities API (6.9+)\n", get_bloginfo('version'));
    return false;
}

/** The tools of the exported schemas, by name, as the Go side wrote them. */
function exported_tools(): array {
    $doc = json_decode(file_get_contents(dirname(__DIR__) . '/includes/tool-schemas.json'), true);
    ok(is_array($doc['tools'] ?? null), 'tool-schemas.json');
    return array_column($doc['tools'], null, 'name');
}

/** A published post the real daemon has indexed, with a marker word; returns (id, marker, url). */
function indexed_post(): array {
    use_daemon(real_daemon());
    $w = marker('Abil');
    $id = new_post(array('post_title' => "$w lighthouse keeper", 'post_content' => "<p>The $w lighthouse keeper lights the lamp at dusk and logs every ship that passes the point.</p>"
        . "<p>In fog the $w keeper sounds the horn twice a minute until the fog lifts.</p>"));
    flush_real();
    ok(wait_for(function () use ($id) { return indexed_title($id) !== null; }, 2.0) >= 0, 'post not indexed');
    return array($id, $w, get_permalink($id));
}

/** The run endpoint's URL for an ability, with its input as GET asks for it. */
function run_url(string $ability, array $input): string {
    $url = rest_url('wp-abilities/v1/abilities/' . $ability . '/run');
    return $url . (strpos($url, '?') === false ? '?' : '&') . http_build_query(array('input' => $input));
}

/** An application password for a user: the Authorization header. */
function app_password(int $user_id): string {
    $user = get_userdata($user_id);
    list($pw, $item) = WP_Application_Passwords::create_new_application_password($user_id, array('name' => 'askwpd-abilities-test-' . wp_generate_password(4, false)));
    cleanup(function () use ($user_id, $item) { WP_Application_Passwords::delete_application_password($user_id, $item['uuid']); });
    return 'Authorization: Basic ' . base64_encode($user->user_login . ':' . $pw);
}

function subscriber(): int {
    $id = wp_insert_user(array('user_login' => 'askwpd-sub-' . strtolower(wp_generate_password(6, false)), 'user_pass' => wp_generate_password(24), 'role' => 'subscriber'));
    ok(!is_wp_error($id), 'subscriber');
    cleanup(function () use ($id) { wp_delete_user($id); });
    return $id;
}

test('abilities: before WordPress 6.9 none register, and the plugin works without them', function () {
    if (function_exists('wp_register_ability')) {
        ok(Askwpd_Abilities::available(), 'the API is there and the plugin sees it');
        return;
    }
    ok(!Askwpd_Abilities::available(), 'no Abilities API');
    ok(!has_action('wp_abilities_api_init', array('Askwpd_Abilities', 'register')), 'nothing hooked');
    // The rest of the plugin is unaffected: the chat route is there.
    ok(isset(rest_get_server()->get_routes()['/askwpd-companion/v1/chat']), 'chat route');
    printf("      WordPress %s: no abilities, as expected\n", get_bloginfo('version'));
});

test('abilities: wp_get_abilities() lists the read tools, built from the exported schemas', function () {
    if (!needs_abilities()) {
        return;
    }
    $tools = exported_tools();
    $ours = array();
    foreach (wp_get_abilities() as $a) {
        if (strpos($a->get_name(), 'askwpd/') === 0) {
            $ours[$a->get_name()] = $a;
        }
    }
    ksort($ours);
    eq(array_keys($ours), array('askwpd/get-document', 'askwpd/get-recent', 'askwpd/search-in-document', 'askwpd/search-site', 'askwpd/verify-quote'), 'askwpd abilities');
    ok(wp_has_ability_category('askwpd'), 'the askwpd category');
    foreach ($ours as $name => $a) {
        $t = $tools[str_replace('-', '_', substr($name, 7))];
        eq($a->get_label(), $t['title'], "$name label");
        eq($a->get_description(), $t['description'], "$name description");
        ok(strpos($a->get_description(), 'EXAMPLES') !== false, "$name: a description an agent can act on");
        eq($a->get_category(), 'askwpd', "$name category");
        eq($a->get_output_schema(), $t['output_schema'], "$name output schema");
        $in = $a->get_input_schema();
        unset($in['default']);
        eq($in, $t['input_schema'], "$name input schema");
        $ann = $a->get_meta_item('annotations');
        eq(array($ann['readonly'], $ann['destructive'], $ann['idempotent'], $ann['openWorldHint']), array(true, false, true, false), "$name annotations");
        eq($a->get_meta_item('show_in_rest'), true, "$name in REST");
        eq($a->get_meta_item('mcp')['public'] ?? null, true, "$name marked for the MCP Adapter");
        printf("      %-28s %-26s in: %s\n", $name, $a->get_label(), implode(', ', array_keys($in['properties'])));
    }
    ok(!wp_has_ability('askwpd/fetch-live-url'), 'fetch_live_url (open world) is not an ability');
});

test('abilities: execute() returns hits with url, title and verbatim passages that verify', function () {
    if (!needs_abilities()) {
        return;
    }
    list($id, $w, $url) = indexed_post();
    wp_set_current_user(1);
    cleanup(function () { wp_set_current_user(0); });
    $r = wp_get_ability('askwpd/search-site')->execute(array('query' => "$w lighthouse"));
    ok(!is_wp_error($r), 'search: ' . (is_wp_error($r) ? $r->get_error_message() : ''));
    ok(count($r['results']) >= 1, 'hits: ' . json_encode($r));
    $hit = $r['results'][0];
    eq($hit['url'], $url, 'the post first');
    ok(strpos($hit['title'], $w) !== false, 'title');
    ok(strpos($hit['passage'], $w) !== false && $hit['start'] < $hit['end'], 'a passage with offsets');
    $q = wp_get_ability('askwpd/verify-quote')->execute(array('url' => $hit['url'], 'quote' => $hit['passage']));
    ok(!is_wp_error($q), 'verify: ' . (is_wp_error($q) ? $q->get_error_message() : ''));
    eq(array($q['found'], $q['match'], $q['start'], $q['end']), array(true, 'exact', $hit['start'], $hit['end']), 'the passage is verbatim at its offsets');
    $doc = wp_get_ability('askwpd/get-document')->execute(array('id_or_url' => (string) $id, 'mode' => 'chunks'));
    ok(!is_wp_error($doc) && $doc['url'] === $url, 'get-document by post ID');
    $text = implode('', array_column($doc['segments'], 'text'));
    eq(mb_substr($text, $hit['start'] - $doc['start'], $hit['end'] - $hit['start']), $hit['passage'], 'the passage is the document at its offsets');
    $in = wp_get_ability('askwpd/search-in-document')->execute(array('id_or_url' => $url, 'query' => 'fog horn'));
    ok(!is_wp_error($in) && $in['evidence'] !== 'none' && strpos($in['results'][0]['passage'], 'fog') !== false, 'search-in-document: ' . json_encode($in));
    $recent = wp_get_ability('askwpd/get-recent')->execute();
    ok(!is_wp_error($recent) && in_array($url, array_column($recent['results'], 'url'), true), 'get-recent without input: ' . json_encode(is_wp_error($recent) ? $recent->get_error_message() : $recent));
});

test('abilities: the REST run endpoint answers over HTTP with an application password', function () {
    if (!needs_abilities()) {
        return;
    }
    list(, $w, $url) = indexed_post();
    site_real();
    $auth = app_password(1);
    $list = http('GET', rest_url('wp-abilities/v1/abilities?category=askwpd'), null, array($auth));
    eq($list['status'], 200, 'list: ' . substr($list['body'], 0, 200));
    eq(count(json_decode($list['body'], true)), 5, 'five askwpd abilities over REST');
    $r = http('GET', run_url('askwpd/search-site', array('query' => "$w lighthouse")), null, array($auth));
    eq($r['status'], 200, 'run: ' . substr($r['body'], 0, 300));
    $d = json_decode($r['body'], true);
    eq($d['results'][0]['url'] ?? null, $url, 'the post first');
    wp_set_current_user(1);
    cleanup(function () { wp_set_current_user(0); });
    $in = wp_get_ability('askwpd/search-site')->execute(array('query' => "$w lighthouse"));
    eq(array_column($d['results'], 'passage'), array_column($in['results'], 'passage'), 'the same hits as execute()');
    eq(array_column($d['results'], 'start'), array_column($in['results'], 'start'), 'the same offsets');
    $r = http('POST', rest_url('wp-abilities/v1/abilities/askwpd/search-site/run'), json_encode(array('input' => array('query' => $w))), array($auth, 'Content-Type: application/json'));
    eq($r['status'], 405, 'read-only abilities answer GET only: ' . $r['body']);
});

test('abilities: bad input gets a 4xx with the ability\'s validation message', function () {
    if (!needs_abilities()) {
        return;
    }
    site_real();
    $auth = app_password(1);
    foreach (array(
        'empty query' => array(array('query' => ''), 'query'),
        'no query' => array(array('limit' => 3), 'query'),
        'wrong type' => array(array('query' => 'lamp', 'limit' => 'many'), 'limit'),
        'out of range' => array(array('query' => 'lamp', 'limit' => 500), 'limit'),
        'unknown argument' => array(array('query' => 'lamp', 'color' => 'red'), 'color'),
    ) as $case => list($input, $names)) {
        $r = http('GET', run_url('askwpd/search-site', $input), null, array($auth));
        $d = json_decode($r['body'], true);
        eq($r['status'], 400, "$case: " . $r['body']);
        eq($d['code'] ?? '', 'ability_invalid_input', "$case: code");
        ok(strpos($d['message'] ?? '', $names) !== false, "$case: the message names $names: " . ($d['message'] ?? ''));
    }
    // 10 KB: in-process through the REST server, as a URL that long is past some web
    // servers' request-line limits (nginx: 8 KB) before WordPress sees it.
    wp_set_current_user(1);
    cleanup(function () { wp_set_current_user(0); });
    $req = new WP_REST_Request('GET', '/wp-abilities/v1/abilities/askwpd/search-site/run');
    $req->set_query_params(array('input' => array('query' => str_repeat('lamp ', 2048))));
    $res = rest_do_request($req);
    eq($res->get_status(), 400, '10 KB query: ' . json_encode($res->get_data()));
    ok(preg_match('/input\[query\] must be at most 10[,. ]?000 characters/', $res->get_data()['message']) === 1, '10 KB query: ' . $res->get_data()['message']);
    // What the schema lets through, the daemon still checks: blank words.
    use_daemon(real_daemon());
    $r = wp_get_ability('askwpd/search-site')->execute(array('query' => '   '));
    ok(is_wp_error($r) && $r->get_error_code() === 'askwpd_invalid' && $r->get_error_data()['status'] === 400, 'blank query: ' . (is_wp_error($r) ? $r->get_error_code() : json_encode($r)));
    eq($r->get_error_message(), 'query is required', "the daemon's message");
});

test('abilities: anonymous callers are refused, subscribers and administrators get the same', function () {
    if (!needs_abilities()) {
        return;
    }
    list(, $w, $url) = indexed_post();
    site_real();
    $input = array('query' => "$w lighthouse");
    // Anonymous, in-process and over HTTP.
    wp_set_current_user(0);
    $r = wp_get_ability('askwpd/search-site')->execute($input);
    eq(is_wp_error($r) ? $r->get_error_code() : 'ran', 'ability_invalid_permissions', 'anonymous, in-process');
    $r = http('GET', run_url('askwpd/search-site', $input));
    eq($r['status'], 401, 'anonymous over REST: ' . $r['body']);
    // A subscriber and an administrator, each with an application password.
    $results = array();
    foreach (array('subscriber' => subscriber(), 'administrator' => 1) as $who => $uid) {
        $r = http('GET', run_url('askwpd/search-site', $input), null, array(app_password($uid)));
        eq($r['status'], 200, "$who: " . substr($r['body'], 0, 200));
        $results[$who] = array_column(json_decode($r['body'], true)['results'], 'passage');
        eq(json_decode($r['body'], true)['results'][0]['url'], $url, "$who: the post");
    }
    eq($results['subscriber'], $results['administrator'], 'the same results: the index holds public pages only');
    // The filter opens them to anonymous callers (here in-process: the site's own workers
    // would need the filter in a plugin).
    add_filter('askwpd_can_run_ability', '__return_true');
    cleanup(function () { remove_filter('askwpd_can_run_ability', '__return_true'); });
    use_daemon(real_daemon());
    $r = wp_get_ability('askwpd/search-site')->execute($input);
    ok(!is_wp_error($r) && $r['results'][0]['url'] === $url, 'anonymous with askwpd_can_run_ability: ' . (is_wp_error($r) ? $r->get_error_message() : ''));
});

test('abilities: a daemon that is down, slow or refusing is a WP_Error that says what to do', function () {
    if (!needs_abilities()) {
        return;
    }
    wp_set_current_user(1);
    cleanup(function () { wp_set_current_user(0); });
    $run = function () { return wp_get_ability('askwpd/search-site')->execute(array('query' => 'lamp')); };
    $check = function ($r, string $code, int $status, string $says, string $case) {
        ok(is_wp_error($r), "$case: not an error: " . json_encode($r));
        eq(array($r->get_error_code(), $r->get_error_data()['status'] ?? null), array($code, $status), "$case: code and status");
        ok(strpos($r->get_error_message(), $says) !== false, "$case: the message says '$says': " . $r->get_error_message());
    };
    use_daemon(array('url' => env('DEAD_URL')) + fake_daemon());
    $t0 = microtime(true);
    $check($run(), 'askwpd_unavailable', 503, 'systemctl start askwpd', 'down');
    ok(microtime(true) - $t0 < 2, 'down: answered at once');
    use_daemon(array('token' => 'wrong') + fake_daemon());
    $check($run(), 'askwpd_unauthorized', 502, 'Tools → AskWP Index', 'refused token');
    use_daemon(fake_daemon());
    $check($run(), 'askwpd_daemon_error', 502, 'journalctl -u askwpd', 'daemon failing');
    touch(env('FAKE_DIR') . '/slow');
    cleanup(function () { @unlink(env('FAKE_DIR') . '/slow'); });
    $ms = function () { return 1000; };
    add_filter('askwpd_ability_timeout_ms', $ms);
    cleanup(function () use ($ms) { remove_filter('askwpd_ability_timeout_ms', $ms); });
    $t0 = microtime(true);
    $check($run(), 'askwpd_timeout', 504, 'did not answer within', 'slow');
    ok(microtime(true) - $t0 < 2, 'slow: gave up after the timeout');
    // The same over REST: the status goes with it.
    $req = new WP_REST_Request('GET', '/wp-abilities/v1/abilities/askwpd/get-recent/run');
    use_daemon(array('url' => env('DEAD_URL')) + fake_daemon());
    $res = rest_do_request($req);
    eq(array($res->get_status(), $res->get_data()['code'] ?? ''), array(503, 'askwpd_unavailable'), 'down, over REST');
});
