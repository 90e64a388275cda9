<?php
// Test oracle: asks WordPress itself which URLs are public, so the
// integration tests compare askwpd's index with WordPress's own answer.
// Usage: php public-urls.php WP_ROOT HOST
$_SERVER['HTTP_HOST'] = $argv[2] ?? '127.0.0.1';
$_SERVER['REQUEST_URI'] = '/';
define('WP_USE_THEMES', false);
require rtrim($argv[1], '/') . '/wp-load.php';

$types = array_values(array_diff(get_post_types(array('public' => true)), array('attachment')));
$posts = get_posts(array(
	'post_type'      => $types,
	'post_status'    => 'publish',
	'has_password'   => false,
	'posts_per_page' => -1,
	'orderby'        => 'ID',
	'order'          => 'ASC',
));
// A site may wall a published page behind wp-login.php (the test site's mu-plugin
// mu-members-only.php does, as membership plugins do): visitors never see it.
$requires_login = function_exists('askwpd_test_requires_login') ? 'askwpd_test_requires_login' : '__return_false';
$walled = array();
$public = array();
foreach ($posts as $p) {
	if ($requires_login($p)) {
		$walled[] = $p;
		continue;
	}
	$public[] = array(
		'id'        => $p->ID,
		'type'      => $p->post_type,
		'title'     => html_entity_decode(get_the_title($p), ENT_QUOTES),
		'url'       => get_permalink($p),
		'published' => get_post_time('c', true, $p),
		'modified'  => get_post_modified_time('c', true, $p),
	);
}
$private = array();
$hidden = get_posts(array(
	'post_type'      => 'any',
	'post_status'    => array('draft', 'pending', 'private', 'future', 'trash', 'auto-draft'),
	'posts_per_page' => -1,
));
$protected = get_posts(array('post_type' => 'any', 'post_status' => 'publish', 'has_password' => true, 'posts_per_page' => -1));
// Attachment pages inherit their parent's status: media attached to a draft or private post
// is a 404 for visitors. (Those of published or unattached media are public in WordPress
// before 6.4, but never in this list of public URLs: they are media, not content.)
$media = array();
foreach (get_posts(array('post_type' => 'attachment', 'post_status' => 'inherit', 'posts_per_page' => -1)) as $p) {
	if (get_post_status($p) !== 'publish') {
		$media[] = $p;
	}
}
foreach (array_merge($hidden, $protected, $walled, $media) as $p) {
	$private[] = array('id' => $p->ID, 'status' => $p->post_status, 'title' => $p->post_title, 'url' => get_permalink($p),
		'content' => wp_strip_all_tags($p->post_content), 'password' => $p->post_password !== '',
		'login' => in_array($p, $walled, true));
}
echo json_encode(array('home' => home_url('/'), 'public' => $public, 'private' => $private));
