<?php
/**
 * Insights: the feedback route (nonce, origin, rate limit, validation, the vote reaching
 * the real daemon's report) and the Tools page.
 */

test('insights: feedback bodies are checked before they reach the daemon', function () {
    $turn = str_repeat('ab', 16);
    eq(Askwpd_Insights::feedback_body(array('turn_id' => $turn, 'vote' => 'down', 'comment' => ' no <b>answer</b> ')),
        array('turn_id' => $turn, 'vote' => 'down', 'comment' => 'no answer'), 'a good vote');
    foreach (array(
        'not an object' => 'x',
        'no turn' => array('vote' => 'up'),
        'bad turn' => array('turn_id' => '../etc/passwd', 'vote' => 'up'),
        'bad vote' => array('turn_id' => $turn, 'vote' => 'sideways'),
        'long comment' => array('turn_id' => $turn, 'vote' => 'up', 'comment' => str_repeat('é', 501)),
    ) as $name => $in) {
        $r = Askwpd_Insights::feedback_body($in);
        ok(is_wp_error($r) && 400 === $r->get_error_data()['status'], "$name is refused with 400");
    }
});

test('insights: the rate limit counts votes per visitor and window', function () {
    $ip = function () { return '192.0.2.' . getmypid() % 250; };
    $lim = function () { return array(3, 60); };
    add_filter('askwpd_client_ip', $ip);
    add_filter('askwpd_feedback_rate_limit', $lim);
    cleanup(function () use ($ip, $lim) {
        remove_filter('askwpd_client_ip', $ip);
        remove_filter('askwpd_feedback_rate_limit', $lim);
    });
    // The chat's atomic counter holds the votes, under a key of their own.
    $key = 'askwpd_rl_fb_' . substr(Askwpd_Chat::ip_key(), strlen('askwpd_rl_'));
    Askwpd_Chat::reset_hits($key);
    cleanup(function () use ($key) {
        Askwpd_Chat::reset_hits($key);
    });
    $got = array();
    for ($i = 0; $i < 4; $i++) {
        $got[] = Askwpd_Insights::rate_limited();
    }
    ok($got === array(false, false, false, true), 'the 4th vote of 3 allowed is refused: ' . json_encode($got));
});

test('insights e2e: a chat answer carries a turn id, a widget votes on it through the REST routes, the report counts it', function () {
    // The routes run in this process, through WordPress's REST server: the site's own PHP
    // workers may still serve another checkout's copy of the plugin (PHP's realpath cache
    // keeps a symlink's old target for up to 120 s).
    site_real();
    use_daemon(real_daemon());
    $rest = function (string $route, array $body, string $nonce = '') {
        $req = new WP_REST_Request('POST', $route);
        $req->set_header('Content-Type', 'application/json');
        if ($nonce !== '') {
            $req->set_header('X-WP-Nonce', $nonce);
        }
        $req->set_body(json_encode($body));
        $res = rest_do_request($req);
        return array($res->get_status(), $res->get_data());
    };
    list($st, $d) = $rest('/askwpd-companion/v1/chat', json_decode(chat_body('Do you sell gift vouchers?'), true));
    eq($st, 200, 'chat: ' . json_encode($d));
    $turn = (string) ($d['turn_id'] ?? '');
    ok(1 === preg_match('/^[0-9a-f]{32}$/', $turn), 'a turn id: ' . substr(json_encode($d), 0, 300));

    $nonce = wp_create_nonce('wp_rest'); // A visitor's: no one is logged in here.
    eq($rest('/askwpd-companion/v1/feedback', array('turn_id' => $turn, 'vote' => 'down'), 'bad-nonce')[0], 403, 'a bad nonce');
    eq($rest('/askwpd-companion/v1/feedback', array('turn_id' => $turn, 'vote' => 'down'))[0], 403, 'no nonce');
    list($st, $d) = $rest('/askwpd-companion/v1/feedback', array('turn_id' => $turn, 'vote' => 'sideways'), $nonce);
    eq($st, 400, 'a bad vote: ' . json_encode($d));
    list($st, $d) = $rest('/askwpd-companion/v1/feedback', array('turn_id' => str_repeat('0', 32), 'vote' => 'up'), $nonce);
    eq($st, 404, 'an unknown turn: ' . json_encode($d));
    list($st, $d) = $rest('/askwpd-companion/v1/feedback', array('turn_id' => $turn, 'vote' => 'down', 'comment' => 'Nothing about vouchers; mail me at someone@example.org'), $nonce);
    eq($st, 200, 'the vote: ' . json_encode($d));

    use_daemon(real_daemon());
    $d = Askwpd_Insights::report('limit=50');
    ok(is_array($d), 'the report: ' . (is_wp_error($d) ? $d->get_error_message() : ''));
    ok((int) $d['votes_down'] >= 1 && (int) $d['chat_turns'] >= 1, 'the down vote is counted: ' . json_encode(array($d['votes_down'], $d['chat_turns'])));
    $comments = array();
    foreach (array_merge($d['gaps'], $d['answered']) as $g) {
        $comments = array_merge($comments, $g['comments'] ?? array());
    }
    ok(in_array('Nothing about vouchers; mail me at [email]', $comments, true), 'the comment, redacted: ' . json_encode($comments));

    // The Tools page shows the report and says what is stored.
    $admin = get_user_by('login', 'admin');
    $prev = get_current_user_id();
    wp_set_current_user($admin->ID);
    cleanup(function () use ($prev) { wp_set_current_user($prev); });
    ob_start();
    Askwpd_Insights::render();
    $html = ob_get_clean();
    ok(strpos($html, 'askwpd-insights-summary') !== false && strpos($html, 'askwpd-gaps') !== false, 'the page shows the report: ' . substr(wp_strip_all_tags($html), 0, 300));
    ok(strpos($html, 'no IP address') !== false && strpos($html, 'retention_days = 0') !== false, 'the page says what is stored and how to turn it off');
});
