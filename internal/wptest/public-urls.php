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
$public = array();
foreach ($posts as $p) {
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
foreach (array_merge($hidden, $protected) as $p) {
	$private[] = array('id' => $p->ID, 'status' => $p->post_status, 'title' => $p->post_title, 'url' => get_permalink($p),
		'content' => wp_strip_all_tags($p->post_content), 'password' => $p->post_password !== '');
}
echo json_encode(array('home' => home_url('/'), 'public' => $public, 'private' => $private));
