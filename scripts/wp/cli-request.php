<?php
/**
 * Makes a command-line script's PHP look like a request to the site at $url before it
 * loads WordPress, and returns the path of wp-load.php to require. Debian's wp-config.php
 * picks /etc/wordpress/config-<HTTP_HOST without port>.php, so the host decides which
 * site's configuration is read. wp-load.php must be required by the caller, at file
 * scope: wp-config.php's variables ($table_prefix, ...) are globals.
 *
 *   require __DIR__ . '/cli-request.php';
 *   require askwpd_cli_request($askwpd_url);
 */
function askwpd_cli_request(string $url): string {
    $u = parse_url($url);
    $_SERVER['HTTP_HOST'] = $u['host'] . (isset($u['port']) ? ':' . $u['port'] : '');
    $_SERVER['SERVER_NAME'] = $u['host'];
    $_SERVER['SERVER_PORT'] = (string) ($u['port'] ?? 80);
    $_SERVER['REQUEST_URI'] = '/';
    $_SERVER['REQUEST_METHOD'] = 'GET';
    $_SERVER['SERVER_PROTOCOL'] = 'HTTP/1.1';
    $_SERVER['REMOTE_ADDR'] = '127.0.0.1';
    return rtrim(getenv('WP_ROOT') ?: '/usr/share/wordpress', '/') . '/wp-load.php';
}
