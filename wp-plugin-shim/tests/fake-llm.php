<?php
/**
 * A scripted LLM speaking OpenAI Chat Completions (streaming and not), for the
 * end-to-end chat tests: the one part a test may script.
 *
 *   php -S 127.0.0.1:PORT fake-llm.php
 *
 * Script: with tools offered and no tool result yet, it calls search_site with the
 * last user message as the query. Once a tool result is in, it answers in plain text,
 * naming the first URL it was given.
 */

$path = parse_url($_SERVER['REQUEST_URI'] ?? '/', PHP_URL_PATH);
if ($_SERVER['REQUEST_METHOD'] !== 'POST' || !preg_match('#/chat/completions$#', $path)) {
    http_response_code(404);
    header('Content-Type: application/json');
    echo '{"error":{"message":"not found","type":"invalid_request_error"}}';
    return true;
}
$req = json_decode(file_get_contents('php://input'), true) ?: array();
$messages = $req['messages'] ?? array();
$tool_result = null;
$question = '';
foreach ($messages as $m) {
    if (($m['role'] ?? '') === 'tool') {
        $tool_result = is_string($m['content'] ?? null) ? $m['content'] : json_encode($m['content'] ?? '');
    }
    if (($m['role'] ?? '') === 'user') {
        $c = $m['content'] ?? '';
        $question = is_string($c) ? $c : (is_array($c) ? (string) ($c[0]['text'] ?? '') : '');
    }
}
$tools = array();
foreach ($req['tools'] ?? array() as $t) {
    $tools[] = $t['function']['name'] ?? '';
}
$call = null;
$text = '';
if ($tool_result === null && in_array('search_site', $tools, true)) {
    $call = array('id' => 'call_fake_1', 'name' => 'search_site', 'arguments' => json_encode(array('query' => $question)));
} else {
    // Name the pages found, and quote the first passage verbatim, as a good model does.
    $found = json_decode((string) $tool_result, true);
    $urls = array();
    $quote = '';
    if (!is_array($found)) {
        preg_match_all('#https?://[^"\s<>]+#', (string) $tool_result, $mm);
        $found = array_map(function ($u) { return array('url' => $u); }, array_slice(array_unique($mm[0]), 0, 3));
    }
    array_walk_recursive($found, function ($v, $k) use (&$urls, &$quote) {
        if ($k === 'url' && is_string($v) && count($urls) < 3 && !in_array($v, $urls, true)) {
            $urls[] = $v;
        }
        if ($quote === '' && in_array($k, array('passage', 'quote', 'text'), true) && is_string($v) && strlen($v) > 20) {
            $quote = preg_split('/(?<=[.!?])\s/', trim($v))[0];
        }
    });
    $text = $urls ? 'According to ' . implode(' and ', $urls) . ($quote !== '' ? ": \"$quote\"" : '.') : 'I found nothing about that on this site.';
}
$usage = array('prompt_tokens' => 100, 'completion_tokens' => 20, 'total_tokens' => 120);
$id = 'chatcmpl-fake';
$model = $req['model'] ?? 'test';

if (!empty($req['stream'])) {
    header('Content-Type: text/event-stream');
    header('Cache-Control: no-cache');
    $send = function (array $chunk) use ($id, $model) {
        $chunk += array('id' => $id, 'object' => 'chat.completion.chunk', 'created' => time(), 'model' => $model);
        echo 'data: ' . json_encode($chunk) . "\n\n";
        @ob_flush();
        flush();
    };
    if ($call) {
        $send(array('choices' => array(array('index' => 0, 'delta' => array('role' => 'assistant', 'tool_calls' => array(array(
            'index' => 0, 'id' => $call['id'], 'type' => 'function', 'function' => array('name' => $call['name'], 'arguments' => ''),
        ))), 'finish_reason' => null))));
        $send(array('choices' => array(array('index' => 0, 'delta' => array('tool_calls' => array(array(
            'index' => 0, 'function' => array('arguments' => $call['arguments']),
        ))), 'finish_reason' => null))));
        $send(array('choices' => array(array('index' => 0, 'delta' => new stdClass(), 'finish_reason' => 'tool_calls'))));
    } else {
        foreach (preg_split('/(?<= )/', $text) as $i => $piece) {
            $delta = array('content' => $piece);
            if ($i === 0) {
                $delta['role'] = 'assistant';
            }
            $send(array('choices' => array(array('index' => 0, 'delta' => $delta, 'finish_reason' => null))));
        }
        $send(array('choices' => array(array('index' => 0, 'delta' => new stdClass(), 'finish_reason' => 'stop'))));
    }
    $send(array('choices' => array(), 'usage' => $usage));
    echo "data: [DONE]\n\n";
    return true;
}

$msg = array('role' => 'assistant', 'content' => $call ? null : $text);
if ($call) {
    $msg['tool_calls'] = array(array('id' => $call['id'], 'type' => 'function', 'function' => array('name' => $call['name'], 'arguments' => $call['arguments'])));
}
header('Content-Type: application/json');
echo json_encode(array(
    'id' => $id, 'object' => 'chat.completion', 'created' => time(), 'model' => $model,
    'choices' => array(array('index' => 0, 'message' => $msg, 'finish_reason' => $call ? 'tool_calls' : 'stop')),
    'usage' => $usage,
));
return true;
