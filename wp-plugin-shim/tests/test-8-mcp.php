<?php
/**
 * The MCP Adapter end to end: with the shared MCP Adapter plugin active (run.sh copies it
 * into the site), the official MCP TypeScript SDK (run.sh installs it with npm) reaches
 * WordPress's MCP endpoints over Streamable HTTP with an application password, finds
 * askwpd's search, calls it, and verifies the hits' passages with askwpd/verify-quote.
 */

test('MCP Adapter: the official MCP client searches the site and verifies the passages', function () {
    if (!function_exists('wp_register_ability')) {
        printf("      skipped: WordPress %s has no Abilities API, which the MCP Adapter needs (6.9+)\n", get_bloginfo('version'));
        return;
    }
    ok(env('MCP_ADAPTER') !== '' && env('MCP_CLIENT') !== '', 'run.sh did not set up the MCP Adapter and client: ' . env('MCP_NOTE'));
    $plugin = 'mcp-adapter/mcp-adapter.php';
    $was = is_plugin_active($plugin);
    if (!$was) {
        $act = activate_plugin($plugin);
        ok(!is_wp_error($act), 'activate the MCP Adapter: ' . (is_wp_error($act) ? $act->get_error_message() : ''));
        cleanup(function () use ($plugin) { deactivate_plugins($plugin); });
    }
    list(, $w, $url) = indexed_post();
    site_real();
    $user = get_userdata(1);
    list($pw, $item) = WP_Application_Passwords::create_new_application_password(1, array('name' => 'askwpd-mcp-test'));
    cleanup(function () use ($item) { WP_Application_Passwords::delete_application_password(1, $item['uuid']); });

    $cmd = 'node ' . escapeshellarg(env('MCP_CLIENT')) . ' ' . escapeshellarg(rtrim(env('SITE_URL'), '/')) . ' '
        . escapeshellarg($user->user_login) . ' ' . escapeshellarg($pw) . ' ' . escapeshellarg("$w lighthouse");
    $t0 = microtime(true);
    exec($cmd . ' 2>&1', $lines, $rc);
    $out = implode("\n", $lines);
    $tr = json_decode((string) end($lines), true);
    ok($rc === 0 && is_array($tr), "the client failed ($rc): " . substr($out, 0, 1500));
    printf("      MCP client ran in %.1f s\n", microtime(true) - $t0);

    // The adapter's default server: askwpd's abilities behind its discover/execute tools.
    $def = $tr['default_server'];
    eq($def['session'], 'yes', 'default server: an Mcp-Session-Id');
    foreach (array('mcp-adapter-discover-abilities', 'mcp-adapter-get-ability-info', 'mcp-adapter-execute-ability') as $t) {
        ok(in_array($t, $def['tools'], true), "default server lists $t: " . json_encode($def['tools']));
    }
    $names = $def['discovered'];
    sort($names);
    eq($names, array('askwpd/get-document', 'askwpd/get-recent', 'askwpd/search-in-document', 'askwpd/search-site', 'askwpd/verify-quote'), 'discovered');
    eq($def['info']['has_output_schema'], true, 'get-ability-info shows the output schema');
    eq($def['execute']['success'], true, 'execute-ability ran search-site');
    eq($def['execute']['results'][0] ?? null, $url, 'execute-ability: the post first');
    printf("      default server: tools %s; discovered %s; execute-ability → %s\n", implode(', ', $def['tools']), implode(', ', $names), $def['execute']['results'][0]);

    // askwpd's own server: the abilities are its tools.
    $own = $tr['askwpd_server'];
    eq($own['session'], 'yes', 'askwpd server: an Mcp-Session-Id');
    $tools = array_column($own['tools'], null, 'name');
    ksort($tools);
    eq(array_keys($tools), array('askwpd-get-document', 'askwpd-get-recent', 'askwpd-search-in-document', 'askwpd-search-site', 'askwpd-verify-quote'), 'askwpd server tools/list');
    foreach ($tools as $n => $t) {
        ok($t['title'] !== '' && $t['output_schema'], "$n: title and output schema");
        eq(array($t['annotations']['readOnlyHint'] ?? null, $t['annotations']['idempotentHint'] ?? null, $t['annotations']['destructiveHint'] ?? null, $t['annotations']['openWorldHint'] ?? null),
            array(true, true, false, false), "$n annotations");
    }
    $hits = $own['search']['results'];
    ok(count($hits) >= 1, 'hits: ' . json_encode($own['search']));
    eq($hits[0]['url'], $url, 'the post first');
    foreach ($hits as $h) {
        eq(array($h['verified']['found'], $h['verified']['start'], $h['verified']['end']), array(true, $h['start'], $h['end']), 'verify-quote finds ' . $h['url'] . ' at its offsets');
        printf("      askwpd-search-site → %s [%d,%d) \"%s…\" → askwpd-verify-quote: %s %s\n", $h['url'], $h['start'], $h['end'], $h['passage'], $h['verified']['found'] ? 'found' : 'NOT FOUND', $h['verified']['match']);
    }
    ok($own['bad_input']['isError'] && strpos($own['bad_input']['text'], 'query') !== false, 'an empty query is a tool error naming it: ' . json_encode($own['bad_input']));
});
