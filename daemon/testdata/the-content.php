<?php
// Test oracle: WordPress's own rendering of each public post's content, so
// the extraction tests compare what askwpd stored with what WordPress
// printed as the post's text, not with what the template around it adds.
// Usage: php the-content.php WP_ROOT HOST
//
// For each published, password-free post of a public type (visitors see it:
// no login wall), it prints the_content of the post's first page (what its
// URL shows: <!--nextpage--> splits the rest onto /2/, /3/), with the
// <!--more--> part included as on a singular view. What renders there but
// is not text of the post is left out, by WordPress's own block names:
//   - core's theme blocks (site title and tagline, post title, date,
//     author, terms, excerpt, navigation, comments, query loops...) and its
//     dynamic widget blocks (latest posts, archives, categories, page list,
//     calendar, RSS, tag cloud, search, social links): they print the site's
//     or other posts' data, not words of this post, even placed inside it;
//   - embeds, audio, video and file players: remote media (no network here),
//     whose fallback is a bare URL;
//   - the galleries, audio and video of legacy shortcodes, for the same
//     reason.
// The caller decides what else of the HTML counts as text (captions are
// illustrations there, as in the extractor).
$_SERVER['HTTP_HOST'] = $argv[2] ?? '127.0.0.1';
$_SERVER['REQUEST_URI'] = '/';
define('WP_USE_THEMES', false);
require rtrim($argv[1], '/') . '/wp-load.php';

$skip_blocks = array(
	'core/site-title', 'core/site-tagline', 'core/site-logo', 'core/template-part', 'core/navigation',
	'core/loginout', 'core/search', 'core/social-links', 'core/post-title', 'core/post-excerpt',
	'core/post-featured-image', 'core/post-author', 'core/post-author-name', 'core/post-author-biography',
	'core/avatar', 'core/post-date', 'core/post-terms', 'core/read-more', 'core/post-navigation-link',
	'core/comments', 'core/comments-title', 'core/comment-template', 'core/post-comments-form',
	'core/term-description', 'core/query', 'core/query-title', 'core/query-pagination',
	'core/latest-posts', 'core/latest-comments', 'core/archives', 'core/categories', 'core/page-list',
	'core/calendar', 'core/rss', 'core/tag-cloud', 'core/embed', 'core/audio', 'core/video', 'core/file',
);
add_filter('render_block', function ($html, $block) use ($skip_blocks) {
	return in_array($block['blockName'], $skip_blocks, true) ? '' : $html;
}, 10, 2);
foreach (array('gallery', 'audio', 'video', 'playlist', 'embed') as $tag) {
	add_shortcode($tag, '__return_empty_string');
}
// A bare URL on its own line is an embed too; without the network it would
// cost a timeout each.
add_filter('pre_oembed_result', function () { return ''; });
add_filter('embed_maybe_make_link', '__return_empty_string');

$types = array_values(array_diff(get_post_types(array('public' => true)), array('attachment')));
$posts = get_posts(array(
	'post_type'      => $types,
	'post_status'    => 'publish',
	'has_password'   => false,
	'posts_per_page' => -1,
	'orderby'        => 'ID',
	'order'          => 'ASC',
));
$requires_login = function_exists('askwpd_test_requires_login') ? 'askwpd_test_requires_login' : '__return_false';
$out = array();
foreach ($posts as $p) {
	if ($requires_login($p)) {
		continue;
	}
	$GLOBALS['post'] = $p;
	setup_postdata($p);
	// As on the post's own page: the text after <!--more--> too. Only the
	// globals say so (get_the_content with a post would not).
	$GLOBALS['more'] = 1;
	$html = apply_filters('the_content', get_the_content());
	$out[] = array(
		'id'    => $p->ID,
		'type'  => $p->post_type,
		'title' => html_entity_decode(get_the_title($p), ENT_QUOTES),
		'url'   => get_permalink($p),
		'html'  => $html,
		'pages' => count(explode('<!--nextpage-->', $p->post_content)),
	);
}
wp_reset_postdata();
echo json_encode($out);
