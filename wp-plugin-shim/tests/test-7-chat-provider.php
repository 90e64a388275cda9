<?php
/**
 * No AI provider: when the daemon's chat answers no_provider, the widget and the companion
 * route say that no key is configured and where the owner sets one, and Site Health says
 * the same; the provider the daemon reports in /v1/status shows in Site Health with its
 * key masked, and a daemon that does not report one is read as such.
 */

require_once ABSPATH . 'wp-admin/includes/class-wp-site-health.php';
require_once ABSPATH . 'wp-admin/includes/class-wp-debug-data.php';

/** The places a 7.x owner is sent to; 6.x has no Connectors screen. */
function provider_places(): array {
    $places = array("AskWP's settings", "askwpd's configuration");
    if (function_exists('wp_get_connectors')) {
        $places[] = 'Settings → Connectors';
    }
    return $places;
}

test('chat: no AI provider: the widget and the companion route say so and where to set one', function () {
    site_fake();
    $want = Askwpd_Chat::no_provider_message();
    ok(strpos($want, 'no AI provider key is configured') !== false, 'the message: ' . $want);
    foreach (provider_places() as $p) {
        ok(strpos($want, $p) !== false, "the message names $p: $want");
    }
    $r = askwp_rest(chat_body('NOPROVIDER'));
    eq(array($r['status'], json_decode($r['body'], true)['message'] ?? ''), array(503, $want), 'AskWP REST');
    eq(json_decode($r['body'], true)['code'] ?? '', 'askwpd_no_provider', 'AskWP REST code');
    $r = askwp_stream(with_stream_id('NOPROVIDER'));
    eq(sse_data($r['body']), array(array('error' => $want), '[DONE]'), 'AskWP stream');
    $r = http('POST', rest_url('askwpd-companion/v1/chat'), chat_body('NOPROVIDER'), array('Content-Type: application/json'));
    eq(array($r['status'], json_decode($r['body'], true)['message'] ?? ''), array(503, $want), 'companion route, not a bare 502');
    // With AskWP itself installed, it answers as before: its own provider may be set.
    site_fake(array('askwp_standin' => true));
    $r = askwp_rest(chat_body('NOPROVIDER'));
    eq(json_decode($r['body'], true)['reply'] ?? null, 'STANDIN', 'AskWP present: it answers');
});

test('chat: a real daemon without a provider: the chat and Site Health say where to set a key', function () {
    $state = sys_get_temp_dir() . '/askwpd-noprov-' . wp_generate_password(8, false);
    mkdir($state, 0700);
    cleanup(function () use ($state) { rm_tree($state); @unlink("$state.log"); });
    $port = free_port();
    $proc = own_daemon_start($state, $port);
    cleanup(function () use ($proc) { own_daemon_stop($proc); });
    $d = own_daemon_settings($state, $port);
    $st = json_decode(http('GET', $d['url'] . '/v1/status', null, array('Authorization: Bearer ' . $d['token']))['body'], true);
    if (is_array($st['provider'] ?? null) && !empty($st['provider']['configured'])) {
        printf("      skipped: this site's options give the daemon a provider (%s)\n", $st['provider']['kind'] ?? '?');
        return;
    }
    site_config(array('ASKWPD_URL' => $d['url'], 'ASKWPD_STATE_DIR' => $state));
    $r = http('POST', rest_url('askwpd-companion/v1/chat'), chat_body('Hello?'), array('Content-Type: application/json'), 30);
    eq(array($r['status'], json_decode($r['body'], true)['message'] ?? ''), array(503, Askwpd_Chat::no_provider_message()), 'companion route: ' . $r['body']);
    $r = askwp_stream(with_stream_id('Hello?'));
    eq(sse_data($r['body'])[0]['error'] ?? '', Askwpd_Chat::no_provider_message(), 'AskWP stream: ' . $r['body']);

    use_daemon($d);
    $h = Askwpd_Health::run('provider');
    if (!array_key_exists('provider', (array) $st)) {
        eq($h['status'], 'good', 'a daemon that does not report its provider');
        ok(strpos($h['description'], 'does not report its AI provider') !== false, 'and it is said: ' . $h['description']);
        echo "      this daemon's /v1/status has no provider object yet\n";
        return;
    }
    eq($h['status'], 'recommended', 'no provider: a recommendation');
    ok(strpos($h['label'], 'No AI provider key') !== false, 'label: ' . $h['label']);
    if (function_exists('wp_get_connectors')) {
        ok(strpos($h['description'], esc_url(admin_url('options-connectors.php'))) !== false, 'links Settings → Connectors: ' . $h['description']);
    }
});

test('site health: the daemon\'s provider, its key masked; a daemon without the field', function () {
    fake_status(healthy_status() + array('provider' => array(
        'configured' => true, 'kind' => 'openai', 'label' => 'OpenAI', 'model' => 'gpt-4o-mini', 'base_url' => '',
        'source' => 'connectors', 'key_from' => 'option connectors_ai_openai_api_key', 'key' => 'sk-…3f9a',
    )));
    $r = Askwpd_Health::run('provider');
    eq($r['status'], 'good', 'configured');
    foreach (array('OpenAI (openai)', 'gpt-4o-mini', 'sk-…3f9a', 'option connectors_ai_openai_api_key') as $want) {
        ok(strpos($r['description'], esc_html($want)) !== false, "names $want: " . $r['description']);
    }
    $f = WP_Debug_Data::debug_data()['askwpd-companion']['fields'];
    eq(array($f['provider']['value'], $f['provider_model']['value'], $f['provider_key']['value']), array('OpenAI (openai)', 'gpt-4o-mini', 'sk-…3f9a'), 'Info');
    ok(strpos($f['provider_source']['value'], 'connectors_ai_openai_api_key (connectors)') !== false, 'Info: where the key comes from');

    // A daemon that sends a key unmasked: never shown as it came.
    $plain = 'sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX1234';
    fake_status(array('provider' => array('configured' => true, 'kind' => 'openai', 'label' => 'OpenAI', 'model' => 'm', 'key' => $plain)));
    $r = Askwpd_Health::run('provider');
    $info = WP_Debug_Data::debug_data()['askwpd-companion'];
    ok(strpos($r['description'], 'ABCDEFGH') === false && strpos(serialize($info), 'ABCDEFGH') === false, 'an unmasked key is masked: ' . $r['description']);
    eq($info['fields']['provider_key']['value'], 'sk-…1234', 'masked here');

    fake_status(array('provider' => array('configured' => false, 'hint' => 'set one under Settings → Connectors <b>now</b>')));
    $r = Askwpd_Health::run('provider');
    eq($r['status'], 'recommended', 'not configured');
    eq($r['label'], 'No AI provider key is configured for the chat', 'label');
    ok(strpos($r['description'], 'Connectors &lt;b&gt;now&lt;/b&gt;') !== false, "the daemon's hint, escaped: " . $r['description']);
    foreach (array("AskWP&#039;s settings", 'askwpd&#039;s configuration') as $want) {
        ok(strpos($r['description'], $want) !== false, "names $want: " . $r['description']);
    }
    if (function_exists('wp_get_connectors')) {
        ok(strpos($r['description'], 'href="' . esc_url(admin_url('options-connectors.php')) . '"') !== false, 'links Settings → Connectors');
    }
    eq(WP_Debug_Data::debug_data()['askwpd-companion']['fields']['provider']['value'], 'none configured', 'Info: none');

    fake_status(healthy_status());
    $r = Askwpd_Health::run('provider');
    eq($r['status'], 'good', 'an older daemon');
    ok(strpos($r['description'], 'does not report its AI provider') !== false, 'says so: ' . $r['description']);
    eq(WP_Debug_Data::debug_data()['askwpd-companion']['fields']['provider']['value'], 'not reported', 'Info: not reported');
});
