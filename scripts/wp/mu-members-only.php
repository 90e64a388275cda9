<?php
/**
 * Plugin Name: askwpd test site: members-only pages
 * Description: Pages with the "Members only" template send visitors to wp-login.php, the way
 *   membership plugins build a login wall. Installed into the test WordPress's mu-plugins by
 *   askwpd's scripts/wp-up.sh; scripts/wp/seed.php seeds one such page.
 *
 * The page stays status "publish" without a password, so the database, the core sitemap and
 * the REST API all call it public: only the rendered page shows it is not. That is the case
 * a crawler must get right on its own.
 */

// (Not function_exists(): PHP declares this file's top-level function before running it.)
if (!defined('ABSPATH') || defined('ASKWPD_MEMBERS_TEMPLATE')) {
    return;
}

define('ASKWPD_MEMBERS_TEMPLATE', 'askwpd-members-only');

/** Whether WordPress sends a visitor of $post to the login page (the test oracle asks too). */
function askwpd_test_requires_login($post) {
    $post = get_post($post);
    return $post instanceof WP_Post && $post->post_type === 'page'
        && get_page_template_slug($post) === ASKWPD_MEMBERS_TEMPLATE;
}

// Listed, so that the editor offers it and wp_insert_post() accepts it as page_template.
add_filter('theme_page_templates', function ($templates) {
    $templates[ASKWPD_MEMBERS_TEMPLATE] = 'Members only';
    return $templates;
});

// Before redirect_canonical (priority 10): /?p=ID must not be redirected to the pretty URL
// first, and nothing of the page may render for a visitor.
add_action('template_redirect', function () {
    if (is_singular() && askwpd_test_requires_login(get_queried_object_id())) {
        auth_redirect();
    }
}, 0);
