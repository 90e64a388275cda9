<?php
/**
 * Router for PHP's built-in server, so that WordPress pretty permalinks work:
 *
 *   PHP_CLI_SERVER_WORKERS=4 php -S 127.0.0.1:PORT -t WP_ROOT scripts/wp/router.php
 *
 * - Existing files under the document root are served by the built-in server itself
 *   (return false): static assets directly, *.php files executed.
 * - Directories with an index file are served the same way (wp-admin/ etc.); without a
 *   trailing slash they are redirected first.
 * - A site whose wp-content lies outside the document root (ASKWPD_WP_CONTENT_DIR, as in
 *   Debian's layout) has its static files served from there.
 * - Everything else goes to WordPress's front controller, index.php.
 * - /__askwpd_ping answers "askwpd-wp-ok <router> <state dir> <server pid>" so that
 *   scripts/wp-up.sh can tell its own server from anything else on the port.
 */

$askwpd_root = rtrim($_SERVER['DOCUMENT_ROOT'], '/');
$askwpd_path = parse_url($_SERVER['REQUEST_URI'] ?? '/', PHP_URL_PATH);
if (!is_string($askwpd_path) || $askwpd_path === '') {
    $askwpd_path = '/';
}
$askwpd_path = rawurldecode($askwpd_path);

if ($askwpd_path === '/__askwpd_ping') {
    header('Content-Type: text/plain; charset=utf-8');
    header('Cache-Control: no-store');
    printf(
        "askwpd-wp-ok %s %s %s\n",
        __FILE__,
        getenv('ASKWPD_WP_STATE_DIR') ?: '-',
        getenv('ASKWPD_WP_SERVER_PID') ?: '-'
    );
    return true;
}

// No NUL bytes, no "..", no dot files (Debian symlinks .htaccess into the document root).
if (strpos($askwpd_path, "\0") !== false || preg_match('#(^|/)\.#', $askwpd_path)) {
    http_response_code(404);
    header('Content-Type: text/plain; charset=utf-8');
    echo "Not Found\n";
    return true;
}

$askwpd_file = $askwpd_root . $askwpd_path;

if (is_file($askwpd_file)) {
    return false;
}

if (is_dir($askwpd_file)) {
    if (substr($askwpd_path, -1) !== '/') {
        $askwpd_query = parse_url($_SERVER['REQUEST_URI'], PHP_URL_QUERY);
        header('Location: ' . $askwpd_path . '/' . ($askwpd_query ? '?' . $askwpd_query : ''), true, 301);
        return true;
    }
    if (is_file($askwpd_file . 'index.php') || is_file($askwpd_file . 'index.html')) {
        return false;
    }
}

if (strncmp($askwpd_path, '/wp-content/', 12) === 0) {
    $askwpd_content = rtrim(getenv('ASKWPD_WP_CONTENT_DIR') ?: '/var/lib/wordpress/wp-content', '/');
    $askwpd_alt = $askwpd_content . substr($askwpd_path, strlen('/wp-content'));
    if (is_file($askwpd_alt) && !preg_match('/\.(php\d?|phtml|phar)$/i', $askwpd_alt)) {
        $askwpd_types = array(
            'css' => 'text/css', 'js' => 'text/javascript', 'json' => 'application/json',
            'png' => 'image/png', 'jpg' => 'image/jpeg', 'jpeg' => 'image/jpeg', 'gif' => 'image/gif',
            'webp' => 'image/webp', 'svg' => 'image/svg+xml', 'ico' => 'image/x-icon',
            'woff' => 'font/woff', 'woff2' => 'font/woff2', 'ttf' => 'font/ttf',
            'txt' => 'text/plain; charset=utf-8', 'xml' => 'application/xml', 'pdf' => 'application/pdf',
            'mp4' => 'video/mp4', 'mp3' => 'audio/mpeg', 'html' => 'text/html; charset=utf-8',
        );
        $askwpd_ext = strtolower(pathinfo($askwpd_alt, PATHINFO_EXTENSION));
        $askwpd_type = $askwpd_types[$askwpd_ext] ?? (function_exists('mime_content_type') ? mime_content_type($askwpd_alt) : false);
        header('Content-Type: ' . ($askwpd_type ?: 'application/octet-stream'));
        header('Content-Length: ' . filesize($askwpd_alt));
        header('Last-Modified: ' . gmdate('D, d M Y H:i:s', filemtime($askwpd_alt)) . ' GMT');
        if ($_SERVER['REQUEST_METHOD'] !== 'HEAD') {
            readfile($askwpd_alt);
        }
        return true;
    }
}

// WordPress front controller. WP::parse_request() ignores the permalink when PHP_SELF equals
// the requested path, which is what the built-in server sets: make it look like index.php.
$_SERVER['SCRIPT_NAME'] = '/index.php';
$_SERVER['PHP_SELF'] = '/index.php';
$_SERVER['SCRIPT_FILENAME'] = $askwpd_root . '/index.php';
chdir($askwpd_root);
unset($askwpd_root, $askwpd_path, $askwpd_file);
require $_SERVER['SCRIPT_FILENAME'];
