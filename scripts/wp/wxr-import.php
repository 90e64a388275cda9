<?php
/**
 * Small WXR (WordPress eXtended RSS) importer for the test site. No network, no plugin.
 *
 *   php wxr-import.php --url=http://127.0.0.1:8089 --file=themeunittestdata.wordpress.xml
 *
 * Imports authors (as users), categories, tags and other terms (nav menus included), posts,
 * pages, attachments (the post only; files are not downloaded), nav menu items and any other
 * registered post type, keeping dates, statuses (publish/draft/pending/private/future/trash,
 * inherit), passwords, parents, menu order, sticky flags and post meta. Comments are skipped.
 *
 * XML elements are matched by LOCAL NAME: the WXR namespace URI differs between exports
 * (http://wordpress.org/export/1.2/ vs https://...).
 *
 * Idempotent: each imported object carries _askwpd_wxr_id = <original ID> and
 * _askwpd_wxr_src = <file basename>; items already imported from the same file are skipped.
 * Original IDs are kept where free (import_id), as WordPress's importer does.
 */

if (PHP_SAPI !== 'cli') {
    exit(1);
}
$opts = getopt('', array('url:', 'file:'));
$askwpd_url = rtrim($opts['url'] ?? (getenv('SITE_URL') ?: ''), '/');
$askwpd_file = $opts['file'] ?? '';
if (!preg_match('#^https?://[^/]+$#', $askwpd_url) || $askwpd_file === '') {
    fwrite(STDERR, "usage: php wxr-import.php --url=http://HOST:PORT --file=export.xml\n");
    exit(2);
}
if (!is_file($askwpd_file)) {
    fwrite(STDERR, "[wp] wxr: note: $askwpd_file not found, nothing imported\n");
    exit(0);
}

require __DIR__ . '/cli-request.php';
require askwpd_cli_request($askwpd_url);
require_once ABSPATH . 'wp-admin/includes/post.php';
require_once ABSPATH . 'wp-admin/includes/nav-menu.php';

function wxr_log($msg) {
    fwrite(STDERR, "[wp] wxr: $msg\n");
}

/** Direct child elements of $el with local name $name. */
function wxr_children(DOMNode $el, $name) {
    $out = array();
    foreach ($el->childNodes as $c) {
        if ($c instanceof DOMElement && $c->localName === $name) {
            $out[] = $c;
        }
    }
    return $out;
}
/** Text of the first direct child with local name $name ('' when absent). */
function wxr_text(DOMNode $el, $name) {
    foreach ($el->childNodes as $c) {
        if ($c instanceof DOMElement && $c->localName === $name) {
            return $c->textContent;
        }
    }
    return '';
}

// ---------------------------------------------------------------------------
$doc = new DOMDocument();
if (!$doc->load($askwpd_file, LIBXML_NOCDATA | LIBXML_PARSEHUGE | LIBXML_NONET)) {
    wxr_log("cannot parse $askwpd_file");
    exit(1);
}
$channel = null;
foreach ($doc->getElementsByTagNameNS('*', 'channel') as $c) {
    $channel = $c;
    break;
}
if (!$channel) {
    wxr_log('no <channel> element: not a WXR file');
    exit(1);
}
$src = basename($askwpd_file);

global $wpdb;
$admin = get_user_by('login', 'admin');
if (!$admin) {
    wxr_log('no admin user; run install.php first');
    exit(1);
}
wp_set_current_user($admin->ID); // unfiltered_html: content is imported as written
wp_defer_term_counting(true);
wp_defer_comment_counting(true);

$stats = array('users' => 0, 'terms' => 0, 'posts' => 0, 'menu_items' => 0, 'skipped' => 0);

// --- authors -------------------------------------------------------------------
$authors = array(); // login => user id
foreach (wxr_children($channel, 'author') as $a) {
    $login = sanitize_user(wxr_text($a, 'author_login'), true);
    if ($login === '') {
        continue;
    }
    $u = get_user_by('login', $login);
    if (!$u) {
        $email = wxr_text($a, 'author_email');
        if (!is_email($email) || email_exists($email)) {
            $email = $login . '@example.com';
        }
        $id = wp_insert_user(array(
            'user_login' => $login, 'user_pass' => wp_generate_password(24, false), 'user_email' => $email,
            'display_name' => wxr_text($a, 'author_display_name') ?: $login,
            'first_name' => wxr_text($a, 'author_first_name'), 'last_name' => wxr_text($a, 'author_last_name'),
            'role' => 'author',
        ));
        if (is_wp_error($id)) {
            wxr_log("author $login: " . $id->get_error_message());
            continue;
        }
        $stats['users']++;
        $authors[$login] = (int) $id;
    } else {
        $authors[$login] = (int) $u->ID;
    }
}

// --- terms ---------------------------------------------------------------------
$term_defs = array(); // [taxonomy, orig id, slug, name, parent slug, description]
foreach (wxr_children($channel, 'category') as $c) {
    $term_defs[] = array('category', (int) wxr_text($c, 'term_id'), wxr_text($c, 'category_nicename'),
        wxr_text($c, 'cat_name'), wxr_text($c, 'category_parent'), wxr_text($c, 'category_description'));
}
foreach (wxr_children($channel, 'tag') as $c) {
    $term_defs[] = array('post_tag', (int) wxr_text($c, 'term_id'), wxr_text($c, 'tag_slug'),
        wxr_text($c, 'tag_name'), '', wxr_text($c, 'tag_description'));
}
foreach (wxr_children($channel, 'term') as $c) {
    $term_defs[] = array(wxr_text($c, 'term_taxonomy'), (int) wxr_text($c, 'term_id'), wxr_text($c, 'term_slug'),
        wxr_text($c, 'term_name'), wxr_text($c, 'term_parent'), wxr_text($c, 'term_description'));
}
$term_map = array(); // "taxonomy:orig id" => new term id
$pending = $term_defs;
for ($pass = 0; $pending && $pass < 10; $pass++) {
    $next = array();
    foreach ($pending as $t) {
        list($tax, $orig, $slug, $name, $parent_slug, $desc) = $t;
        if (!taxonomy_exists($tax) || $slug === '') {
            continue;
        }
        $parent = 0;
        if ($parent_slug !== '') {
            $p = get_term_by('slug', $parent_slug, $tax);
            if (!$p) {
                $next[] = $t; // parent not created yet
                continue;
            }
            $parent = (int) $p->term_id;
        }
        $existing = get_term_by('slug', $slug, $tax);
        if ($existing) {
            $term_map["$tax:$orig"] = (int) $existing->term_id;
            continue;
        }
        $r = wp_insert_term($name !== '' ? $name : $slug, $tax, array('slug' => $slug, 'parent' => $parent, 'description' => $desc));
        if (is_wp_error($r)) {
            if ($r->get_error_code() === 'term_exists') {
                $term_map["$tax:$orig"] = (int) $r->get_error_data();
            } else {
                wxr_log("term $tax/$slug: " . $r->get_error_message());
            }
            continue;
        }
        $term_map["$tax:$orig"] = (int) $r['term_id'];
        $stats['terms']++;
    }
    $pending = $next;
}

/** Term id for (taxonomy, slug), created when missing. */
function wxr_term_id($tax, $slug, $name) {
    global $stats;
    if (!taxonomy_exists($tax)) {
        return 0;
    }
    $t = get_term_by('slug', $slug, $tax);
    if ($t) {
        return (int) $t->term_id;
    }
    $r = wp_insert_term($name !== '' ? $name : $slug, $tax, array('slug' => $slug));
    if (is_wp_error($r)) {
        return $r->get_error_code() === 'term_exists' ? (int) $r->get_error_data() : 0;
    }
    $stats['terms']++;
    return (int) $r['term_id'];
}

// --- items -----------------------------------------------------------------------
$post_map = array(); // orig id => new id
foreach ($wpdb->get_results($wpdb->prepare(
    "SELECT i.post_id, i.meta_value AS orig FROM {$wpdb->postmeta} i
     JOIN {$wpdb->postmeta} s ON s.post_id = i.post_id AND s.meta_key = '_askwpd_wxr_src' AND s.meta_value = %s
     WHERE i.meta_key = '_askwpd_wxr_id'", $src)) as $r) {
    $post_map[(int) $r->orig] = (int) $r->post_id;
}

$items = array();
foreach (wxr_children($channel, 'item') as $it) {
    $content = '';
    $excerpt = '';
    foreach (wxr_children($it, 'encoded') as $e) {
        if (strpos((string) $e->namespaceURI, '/excerpt/') !== false || $e->prefix === 'excerpt') {
            $excerpt = $e->textContent;
        } else {
            $content = $e->textContent;
        }
    }
    $terms = array();
    foreach (wxr_children($it, 'category') as $c) {
        $dom = $c->getAttribute('domain');
        $nice = $c->getAttribute('nicename');
        if ($dom !== '' && $nice !== '') {
            $terms[] = array($dom, $nice, $c->textContent);
        }
    }
    $meta = array();
    foreach (wxr_children($it, 'postmeta') as $m) {
        $meta[] = array(wxr_text($m, 'meta_key'), wxr_text($m, 'meta_value'));
    }
    $items[] = array(
        'orig' => (int) wxr_text($it, 'post_id'),
        'type' => wxr_text($it, 'post_type'),
        'title' => wxr_text($it, 'title'),
        'content' => $content,
        'excerpt' => $excerpt,
        'creator' => sanitize_user(wxr_text($it, 'creator'), true),
        'guid' => wxr_text($it, 'guid'),
        'date' => wxr_text($it, 'post_date'),
        'date_gmt' => wxr_text($it, 'post_date_gmt'),
        'comment_status' => wxr_text($it, 'comment_status') ?: 'closed',
        'ping_status' => wxr_text($it, 'ping_status') ?: 'closed',
        'name' => wxr_text($it, 'post_name'),
        'status' => wxr_text($it, 'status') ?: 'publish',
        'parent' => (int) wxr_text($it, 'post_parent'),
        'menu_order' => (int) wxr_text($it, 'menu_order'),
        'password' => wxr_text($it, 'post_password'),
        'sticky' => wxr_text($it, 'is_sticky') === '1',
        'attachment_url' => wxr_text($it, 'attachment_url'),
        'terms' => $terms,
        'meta' => $meta,
    );
}

$skip_meta = array('_edit_lock' => 1, '_edit_last' => 1, '_wp_old_slug' => 1, '_pingme' => 1, '_encloseme' => 1);
$imported = array(); // new id => item (this run)
$menu_items = array();
foreach ($items as $item) {
    if ($item['type'] === 'nav_menu_item') {
        $menu_items[] = $item;
        continue;
    }
    if ($item['type'] === '' || $item['type'] === 'revision' || !post_type_exists($item['type'])) {
        $stats['skipped']++;
        continue;
    }
    if (isset($post_map[$item['orig']])) {
        continue; // imported earlier
    }
    $arr = array(
        'import_id' => $item['orig'],
        'post_type' => $item['type'],
        'post_title' => $item['title'],
        'post_content' => $item['content'],
        'post_excerpt' => $item['excerpt'],
        'post_name' => $item['name'],
        'post_author' => $authors[$item['creator']] ?? $admin->ID,
        'post_date' => $item['date'],
        'comment_status' => $item['comment_status'],
        'ping_status' => $item['ping_status'],
        'post_status' => $item['status'],
        'menu_order' => $item['menu_order'],
        'post_password' => $item['password'],
        'guid' => $item['guid'],
    );
    if ($item['date_gmt'] !== '' && $item['date_gmt'] !== '0000-00-00 00:00:00') {
        $arr['post_date_gmt'] = $item['date_gmt'];
    }
    if ($item['type'] === 'attachment') {
        $url = $item['attachment_url'] ?: $item['guid'];
        $ft = wp_check_filetype(basename((string) parse_url($url, PHP_URL_PATH)));
        $arr['post_mime_type'] = $ft['type'] ?: 'application/octet-stream';
        $arr['guid'] = $url;
        $arr['post_status'] = 'inherit';
    }
    $id = wp_insert_post(wp_slash($arr), true);
    if (is_wp_error($id) || !$id) {
        wxr_log("item {$item['orig']} ({$item['type']} '{$item['title']}'): " . (is_wp_error($id) ? $id->get_error_message() : 'failed'));
        $stats['skipped']++;
        continue;
    }
    $id = (int) $id;
    // wp_insert_post() publishes a "future" item whose date has passed, and the other way round;
    // keep the file's status as it is.
    if ($item['type'] !== 'attachment' && get_post_status($id) !== $item['status'] && get_post_status_object($item['status'])) {
        $wpdb->update($wpdb->posts, array('post_status' => $item['status']), array('ID' => $id));
        clean_post_cache($id);
    }
    add_post_meta($id, '_askwpd_wxr_id', (string) $item['orig'], true);
    add_post_meta($id, '_askwpd_wxr_src', $src, true);
    foreach ($item['meta'] as $m) {
        if ($m[0] === '' || isset($skip_meta[$m[0]])) {
            continue;
        }
        add_post_meta($id, wp_slash($m[0]), wp_slash(maybe_unserialize($m[1])));
    }
    $by_tax = array();
    foreach ($item['terms'] as $t) {
        $tid = wxr_term_id($t[0], $t[1], $t[2]);
        if ($tid) {
            $by_tax[$t[0]][] = $tid;
        }
    }
    foreach ($by_tax as $tax => $ids) {
        wp_set_object_terms($id, $ids, $tax);
    }
    if ($item['sticky'] && $item['type'] === 'post') {
        stick_post($id);
    }
    $post_map[$item['orig']] = $id;
    $imported[$id] = $item;
    $stats['posts']++;
}

// Second pass: parents and featured images point at original IDs.
foreach ($imported as $id => $item) {
    $upd = array();
    if ($item['parent'] && isset($post_map[$item['parent']]) && $post_map[$item['parent']] !== $id) {
        $upd['post_parent'] = $post_map[$item['parent']];
    }
    if ($upd) {
        $wpdb->update($wpdb->posts, $upd, array('ID' => $id));
        clean_post_cache($id);
    }
    $thumb = get_post_meta($id, '_thumbnail_id', true);
    if ($thumb !== '' && isset($post_map[(int) $thumb])) {
        update_post_meta($id, '_thumbnail_id', $post_map[(int) $thumb]);
    }
}

// --- nav menu items ----------------------------------------------------------------
$menu_pending = array();
foreach ($menu_items as $item) {
    if (isset($post_map[$item['orig']])) {
        continue;
    }
    $menu_slug = '';
    foreach ($item['terms'] as $t) {
        if ($t[0] === 'nav_menu') {
            $menu_slug = $t[1];
        }
    }
    $menu = $menu_slug !== '' ? get_term_by('slug', $menu_slug, 'nav_menu') : false;
    if (!$menu) {
        $stats['skipped']++;
        continue;
    }
    $m = array();
    foreach ($item['meta'] as $kv) {
        $m[$kv[0]] = $kv[1];
    }
    $type = $m['_menu_item_type'] ?? 'custom';
    $object = $m['_menu_item_object'] ?? 'custom';
    $object_id = (int) ($m['_menu_item_object_id'] ?? 0);
    if ($type === 'post_type') {
        if (!isset($post_map[$object_id])) {
            $stats['skipped']++; // points at something the file does not contain
            continue;
        }
        $object_id = $post_map[$object_id];
    } elseif ($type === 'taxonomy') {
        if (!isset($term_map["$object:$object_id"])) {
            $stats['skipped']++;
            continue;
        }
        $object_id = $term_map["$object:$object_id"];
    }
    $classes = maybe_unserialize($m['_menu_item_classes'] ?? '');
    $menu_pending[] = array($item, (int) $menu->term_id, array(
        'menu-item-title' => $item['title'],
        'menu-item-type' => $type,
        'menu-item-object' => $object,
        'menu-item-object-id' => $object_id,
        'menu-item-url' => $m['_menu_item_url'] ?? '',
        'menu-item-target' => $m['_menu_item_target'] ?? '',
        'menu-item-classes' => is_array($classes) ? implode(' ', $classes) : (string) $classes,
        'menu-item-xfn' => $m['_menu_item_xfn'] ?? '',
        'menu-item-position' => $item['menu_order'],
        'menu-item-status' => 'publish',
        'menu-item-description' => $item['content'],
        'menu-item-attr-title' => $item['excerpt'],
    ), (int) ($m['_menu_item_menu_item_parent'] ?? 0));
}
// Parents first: retry items whose parent menu item is not imported yet.
for ($pass = 0; $menu_pending && $pass < 10; $pass++) {
    $next = array();
    foreach ($menu_pending as $mp) {
        list($item, $menu_id, $args, $orig_parent) = $mp;
        if ($orig_parent) {
            if (!isset($post_map[$orig_parent])) {
                $next[] = $mp;
                continue;
            }
            $args['menu-item-parent-id'] = $post_map[$orig_parent];
        }
        $id = wp_update_nav_menu_item($menu_id, 0, wp_slash($args));
        if (is_wp_error($id)) {
            wxr_log("menu item {$item['orig']}: " . $id->get_error_message());
            continue;
        }
        add_post_meta($id, '_askwpd_wxr_id', (string) $item['orig'], true);
        add_post_meta($id, '_askwpd_wxr_src', $src, true);
        $post_map[$item['orig']] = (int) $id;
        $stats['menu_items']++;
    }
    if (count($next) === count($menu_pending)) {
        $stats['skipped'] += count($next); // parents missing from the file
        break;
    }
    $menu_pending = $next;
}

wp_defer_term_counting(false);
wp_defer_comment_counting(false);

wxr_log(sprintf('%s: %d users, %d terms, %d posts, %d menu items imported, %d skipped',
    $src, $stats['users'], $stats['terms'], $stats['posts'], $stats['menu_items'], $stats['skipped']));
