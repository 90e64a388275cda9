<?php
/**
 * Plugin Check's rules that apply to this plugin, checked here (neither Plugin Check nor
 * phpcs with the WordPress standard can be installed on the test machines): versions,
 * curl_close() only where PHP needs it, the direct cURL calls a unix socket needs marked,
 * escaped output, direct access guards, prefixes, no deprecated WordPress or PHP calls,
 * direct database queries marked, permission callbacks on every REST route, nonces and
 * capabilities on every admin action.
 */

function plugin_dir_root(): string { return dirname(__DIR__); }

/** The plugin's shipped PHP files, relative to its folder. */
function plugin_php_files(): array {
    $out = array();
    $it = new RecursiveIteratorIterator(new RecursiveDirectoryIterator(plugin_dir_root(), FilesystemIterator::SKIP_DOTS));
    foreach ($it as $f) {
        $rel = substr($f->getPathname(), strlen(plugin_dir_root()) + 1);
        if ($f->getExtension() === 'php' && strpos($rel, 'tests/') !== 0) {
            $out[] = $rel;
        }
    }
    sort($out);
    return $out;
}

/** The significant tokens of a file: no whitespace or comments, each with its line. */
function code_tokens(string $rel): array {
    $out = array();
    $line = 1;
    foreach (token_get_all(file_get_contents(plugin_dir_root() . "/$rel")) as $t) {
        if (is_array($t)) {
            $line = $t[2];
            if (in_array($t[0], array(T_WHITESPACE, T_COMMENT, T_DOC_COMMENT, T_OPEN_TAG), true)) {
                continue;
            }
            $out[] = array($t[0], $t[1], $line);
        } else {
            $out[] = array(0, $t, $line);
        }
    }
    return $out;
}

/** The readme's and the header's fields. */
function plugin_headers(): array {
    $readme = file_get_contents(plugin_dir_root() . '/readme.txt');
    // The header: the lines between the title and the first section.
    preg_match_all('/^([A-Za-z ]+):[ \t]*(.+)$/m', substr($readme, 0, (int) strpos($readme, "\n== ")), $m, PREG_SET_ORDER);
    $r = array();
    foreach ($m as $x) {
        $r[trim($x[1])] = trim($x[2]);
    }
    return array($r, get_plugin_data(plugin_dir_root() . '/askwpd-companion.php', false, false));
}

test('plugin check: versions: Requires at least, Tested up to, Requires PHP', function () {
    list($readme, $header) = plugin_headers();
    // The oldest version the suite runs on (scripts/test.sh wp61).
    eq($header['RequiresWP'], '6.1', 'header Requires at least');
    eq($readme['Requires at least'] ?? '', $header['RequiresWP'], 'readme Requires at least');
    eq($readme['Requires PHP'] ?? '', $header['RequiresPHP'], 'readme Requires PHP');
    ok(version_compare(PHP_VERSION, $header['RequiresPHP'], '>='), 'this PHP meets Requires PHP');
    $wp = implode('.', array_slice(explode('.', get_bloginfo('version')), 0, 2));
    ok(version_compare($readme['Tested up to'] ?? '0', $wp, '>='), 'readme.txt says Tested up to ' . ($readme['Tested up to'] ?? '?') . ', below this WordPress ' . $wp);
    ok(version_compare($wp, $header['RequiresWP'], '>='), "this WordPress $wp meets Requires at least");
    eq($readme['Stable tag'] ?? '', $header['Version'], 'Stable tag is the version');
    ok(count(array_filter(array_map('trim', explode(',', $readme['Tags'] ?? '')))) <= 5, 'at most 5 tags');
});

test('plugin check: curl_close() only before PHP 8.0; each direct cURL call marked with why', function () {
    $bad = array();
    foreach (plugin_php_files() as $rel) {
        $lines = file(plugin_dir_root() . "/$rel");
        $disabled = false;
        foreach ($lines as $i => $l) {
            if (preg_match('#phpcs:disable WordPress\.WP\.AlternativeFunctions\s+--\s+\S#', $l)) {
                $disabled = true;
            } elseif (strpos($l, 'phpcs:enable WordPress.WP.AlternativeFunctions') !== false) {
                $disabled = false;
            }
            if (!preg_match('/\bcurl_[a-z_]+\s*\(/', $l) || preg_match('/^\s*(\*|\/\/)/', $l)) {
                continue;
            }
            if (preg_match('/\bcurl_close\s*\(/', $l) && strpos($lines[$i - 1] ?? '', 'PHP_VERSION_ID < 80000') === false) {
                $bad[] = "$rel:" . ($i + 1) . ': curl_close() outside a PHP_VERSION_ID < 80000 guard';
            }
            if (!$disabled && !preg_match('#phpcs:ignore WordPress\.WP\.AlternativeFunctions\S*\s+--\s+\S#', $l)) {
                $bad[] = "$rel:" . ($i + 1) . ': a cURL call without a phpcs exception and its reason';
            }
        }
    }
    eq($bad, array(), 'cURL calls');
});

test('plugin check: each direct database query is marked as an exception', function () {
    $bad = array();
    $n = 0;
    foreach (plugin_php_files() as $rel) {
        foreach (file(plugin_dir_root() . "/$rel") as $i => $l) {
            if (!preg_match('/\$wpdb->(query|get_var|get_results|get_row|get_col|insert|update|delete|replace)\s*\(/', $l)) {
                continue;
            }
            $n++;
            if (!preg_match('#phpcs:ignore [A-Za-z.,_]*WordPress\.DB\.DirectDatabaseQuery#', $l)) {
                $bad[] = "$rel:" . ($i + 1) . ': ' . trim($l);
            }
        }
    }
    eq($bad, array(), 'unmarked direct queries');
    ok($n >= 10, "queries checked: $n");
});

/**
 * Whether one part of a printed expression is safe, as WordPress's coding standard
 * (EscapeOutput) reads it: a literal, a number or cast, a call of an escaping function, a
 * formatting function (sprintf, implode) whose arguments are all safe.
 */
function safe_part(array $part): bool {
    $escape = array('esc_html', 'esc_attr', 'esc_url', 'esc_html__', 'esc_attr__', 'esc_html_x', 'esc_attr_x', 'esc_textarea', 'esc_js',
        'wp_kses', 'wp_kses_post', 'absint', 'intval', 'number_format_i18n', 'get_submit_button', 'checked', 'selected', 'disabled');
    $format = array('sprintf', 'vsprintf', 'implode', 'join');
    if (!$part) {
        return true;
    }
    list($type, $text) = $part[0];
    if ($type === T_INT_CAST || (in_array($type, array(T_CONSTANT_ENCAPSED_STRING, T_LNUMBER, T_DNUMBER), true) && count($part) === 1)) {
        return true;
    }
    if ($type !== T_STRING || ($part[1][1] ?? '') !== '(' || end($part)[1] !== ')') {
        return false;
    }
    // A call that spans the whole part.
    $depth = 0;
    foreach (array_slice($part, 1) as $k => $t) {
        $depth += $t[1] === '(' ? 1 : ($t[1] === ')' ? -1 : 0);
        if ($depth === 0 && $k < count($part) - 2) {
            return false;
        }
    }
    if (in_array($text, $escape, true)) {
        return true;
    }
    if (in_array($text, $format, true)) {
        foreach (expression_parts(array_slice($part, 2, -1), array(',')) as $arg) {
            if (!safe_expr($arg)) {
                return false;
            }
        }
        return true;
    }
    return false;
}

/** Whether a printed expression is safe: a ternary's branches, or each part of a concatenation. */
function safe_expr(array $toks): bool {
    // A ternary binds loosest: the condition is not printed; both branches are.
    $depth = 0;
    foreach ($toks as $k => $t) {
        $depth += in_array($t[1], array('(', '[', '{'), true) ? 1 : (in_array($t[1], array(')', ']', '}'), true) ? -1 : 0);
        if ($depth === 0 && $t[1] === '?') {
            $rest = array_slice($toks, $k + 1);
            $d2 = 0;
            foreach ($rest as $k2 => $t2) {
                $d2 += in_array($t2[1], array('(', '[', '{'), true) ? 1 : (in_array($t2[1], array(')', ']', '}'), true) ? -1 : 0);
                if ($d2 === 0 && $t2[1] === ':') {
                    return safe_expr(array_slice($rest, 0, $k2)) && safe_expr(array_slice($rest, $k2 + 1));
                }
            }
            return false;
        }
    }
    foreach (expression_parts($toks, array('.')) as $p) {
        if (!safe_part($p)) {
            return false;
        }
    }
    return true;
}

/** The top-level parts of an expression, split at the given operators. */
function expression_parts(array $toks, array $at = array('.', ',')): array {
    $parts = array(array());
    $depth = 0;
    foreach ($toks as $t) {
        if (in_array($t[1], array('(', '[', '{'), true)) {
            $depth++;
        } elseif (in_array($t[1], array(')', ']', '}'), true)) {
            $depth--;
        }
        if ($depth === 0 && in_array($t[1], $at, true)) {
            $parts[] = array();
            continue;
        }
        $parts[count($parts) - 1][] = $t;
    }
    return $parts;
}

test('plugin check: output is escaped (echo, print, printf)', function () {
    $bad = array();
    $checked = 0;
    foreach (plugin_php_files() as $rel) {
        $lines = file(plugin_dir_root() . "/$rel");
        $toks = code_tokens($rel);
        foreach ($toks as $i => $t) {
            $is_echo = in_array($t[0], array(T_ECHO, T_PRINT), true);
            $is_printf = $t[0] === T_STRING && in_array($t[1], array('printf', 'vprintf'), true) && ($toks[$i - 1][1] ?? '') !== '->' && ($toks[$i + 1][1] ?? '') === '(';
            if (!$is_echo && !$is_printf) {
                continue;
            }
            $stmt = array();
            $depth = 0;
            for ($j = $i + 1; $j < count($toks) && !($depth === 0 && $toks[$j][1] === ';'); $j++) {
                $depth += in_array($toks[$j][1], array('(', '[', '{'), true) ? 1 : (in_array($toks[$j][1], array(')', ']', '}'), true) ? -1 : 0);
                $stmt[] = $toks[$j];
            }
            $last = $toks[$j - 1][2];
            $ignored = false;
            for ($l = $t[2]; $l <= $last; $l++) {
                $ignored = $ignored || strpos($lines[$l - 1], 'phpcs:ignore WordPress.Security.EscapeOutput') !== false;
            }
            if ($ignored) {
                continue;
            }
            if ($is_printf) {
                $stmt = array_slice($stmt, 1, -1); // inside printf( ... )
            }
            $parts = expression_parts($stmt, array(','));
            if ($is_printf && !safe_expr($parts[0])) {
                $bad[] = "$rel:{$t[2]}: printf with a format that is not a literal";
            }
            foreach ($is_printf ? array_slice($parts, 1) : $parts as $p) {
                if (!safe_expr($p)) {
                    $bad[] = "$rel:{$t[2]}: " . implode(' ', array_column(array_slice($p, 0, 6), 1));
                }
            }
            $checked++;
        }
    }
    eq($bad, array(), 'unescaped output');
    ok($checked > 30, "statements checked: $checked");
});

test('plugin check: every file refuses direct access; globals carry the prefix', function () {
    $bad = array();
    foreach (plugin_php_files() as $rel) {
        $src = file_get_contents(plugin_dir_root() . "/$rel");
        $guard = $rel === 'uninstall.php' ? "defined( 'WP_UNINSTALL_PLUGIN' )" : "defined( 'ABSPATH' )";
        if (strpos($src, $guard) === false) {
            $bad[] = "$rel: no $guard check";
        }
        $toks = code_tokens($rel);
        $depth = 0;
        foreach ($toks as $i => $t) {
            $depth += $t[1] === '{' || $t[0] === T_CURLY_OPEN || $t[0] === T_DOLLAR_OPEN_CURLY_BRACES ? 1 : ($t[1] === '}' ? -1 : 0);
            if (in_array($t[0], array(T_CLASS, T_INTERFACE, T_TRAIT), true) && ($toks[$i + 1][0] ?? 0) === T_STRING && stripos($toks[$i + 1][1], 'askwpd_') !== 0) {
                $bad[] = "$rel:{$t[2]}: class {$toks[$i + 1][1]} lacks the Askwpd_ prefix";
            }
            if ($t[0] === T_FUNCTION && $depth === 0 && ($toks[$i + 1][0] ?? 0) === T_STRING && strpos($toks[$i + 1][1], 'askwpd_') !== 0) {
                $bad[] = "$rel:{$t[2]}: function {$toks[$i + 1][1]} lacks the askwpd_ prefix";
            }
            if ($t[0] === T_STRING && $t[1] === 'define' && ($toks[$i + 1][1] ?? '') === '(' && strpos(trim($toks[$i + 2][1], '\'"'), 'ASKWPD_') !== 0) {
                $bad[] = "$rel:{$t[2]}: constant {$toks[$i + 2][1]} lacks the ASKWPD_ prefix";
            }
            if ($t[0] === T_VARIABLE && $depth === 0 && strpos($t[1], '$askwpd_') !== 0 && !in_array($t[1], array('$wpdb'), true)) {
                $bad[] = "$rel:{$t[2]}: global {$t[1]} lacks the askwpd_ prefix";
            }
        }
    }
    eq($bad, array(), 'guards and prefixes');
});

test('plugin check: no deprecated WordPress or PHP functions', function () {
    // WordPress's own lists of what it deprecated, read from the version under test.
    $deprecated = array();
    foreach (array(ABSPATH . WPINC . '/deprecated.php', ABSPATH . 'wp-admin/includes/deprecated.php', ABSPATH . WPINC . '/pluggable-deprecated.php', ABSPATH . WPINC . '/ms-deprecated.php') as $f) {
        if (is_file($f) && preg_match_all('/^function\s+&?\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(/m', file_get_contents($f), $m)) {
            $deprecated = array_merge($deprecated, $m[1]);
        }
    }
    ok(count($deprecated) > 100, 'deprecated functions read: ' . count($deprecated));
    // PHP's, up to 8.5.
    $deprecated = array_merge($deprecated, array('create_function', 'each', 'utf8_encode', 'utf8_decode', 'strftime', 'gmstrftime', 'money_format',
        'curl_share_close', 'mhash', 'odbc_result_all', 'key_exists', 'date_sunrise', 'date_sunset', 'libxml_disable_entity_loader'));
    $deprecated = array_flip(array_map('strtolower', $deprecated));
    $bad = array();
    foreach (plugin_php_files() as $rel) {
        $toks = code_tokens($rel);
        foreach ($toks as $i => $t) {
            if ($t[0] === T_STRING && ($toks[$i + 1][1] ?? '') === '(' && isset($deprecated[strtolower($t[1])])
                && !in_array($toks[$i - 1][0] ?? 0, array(T_OBJECT_OPERATOR, T_DOUBLE_COLON, T_FUNCTION, T_NEW), true)) {
                $bad[] = "$rel:{$t[2]}: {$t[1]}()";
            }
            if ($t[0] === T_STRING && in_array($t[1], array('FILTER_SANITIZE_STRING', 'FILTER_SANITIZE_STRIPPED'), true)) {
                $bad[] = "$rel:{$t[2]}: {$t[1]}";
            }
            if ($t[0] === T_DOLLAR_OPEN_CURLY_BRACES) {
                $bad[] = "$rel:{$t[2]}: \${} string interpolation (deprecated in PHP 8.2)";
            }
        }
    }
    eq($bad, array(), 'deprecated calls');
});

test('plugin check: every REST route has a permission callback; every admin action a nonce and a capability', function () {
    $public = array();
    $n = 0;
    foreach (rest_get_server()->get_routes() as $route => $handlers) {
        // The namespace's own index (/askwpd-companion/v1) is WordPress's.
        if (!preg_match('#^/(askwpd-companion|askwp-companion)/v1/.#', $route)) {
            continue;
        }
        foreach ($handlers as $h) {
            $n++;
            ok(isset($h['permission_callback']) && is_callable($h['permission_callback']), "$route has no permission callback");
            if ($h['permission_callback'] === '__return_true') {
                $public[] = $route;
            }
        }
    }
    ok($n >= 4, "routes checked: $n");
    // The public ones are the visitors' chat and feedback, which guard themselves (origin,
    // size, rate, and a nonce for feedback).
    foreach ($public as $route) {
        ok(preg_match('#/(chat|feedback)$#', $route) === 1, "$route is public");
    }
    printf("      %d route handlers; public: %s\n", $n, implode(', ', $public));

    // The admin-post actions, as the sources hook them (they are hooked in wp-admin only).
    $actions = 0;
    foreach (plugin_php_files() as $rel) {
        $src = file_get_contents(plugin_dir_root() . "/$rel");
        if (!preg_match('/^final class (\w+)/m', $src, $cm)) {
            continue;
        }
        preg_match_all("/add_action\(\s*'(admin_post_[a-z_]+|wp_ajax_[a-z_]+)',\s*array\(\s*__CLASS__,\s*'(\w+)'/", $src, $m, PREG_SET_ORDER);
        foreach ($m as list(, $hook, $method)) {
            $ref = new ReflectionMethod($cm[1], $method);
            $body = implode('', array_slice(file($ref->getFileName()), $ref->getStartLine() - 1, $ref->getEndLine() - $ref->getStartLine() + 1));
            if (strpos($hook, 'wp_ajax_') === 0) {
                // The visitors' chat stream, public like AskWP's: guarded by origin, size and rate.
                ok(strpos($body, 'self::guard(') !== false, "$hook: {$cm[1]}::$method is not guarded");
                continue;
            }
            ok(strpos($hook, 'admin_post_askwpd_') === 0, "$hook: an admin action without the askwpd_ prefix");
            ok(strpos($body, 'check_admin_referer(') !== false || strpos($body, 'wp_verify_nonce(') !== false, "$hook: {$cm[1]}::$method checks no nonce");
            ok(strpos($body, 'current_user_can(') !== false, "$hook: {$cm[1]}::$method checks no capability");
            $actions++;
        }
    }
    ok($actions >= 3, "admin actions checked: $actions");
});
