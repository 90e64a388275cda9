<?php
/**
 * Seeds the test site with realistic content through WordPress's own API. Idempotent: every
 * seeded object carries the meta _askwpd_seed = <key> and _askwpd_seed_hash = hash of its
 * spec; a re-run inserts what is missing, updates what changed in this file (never the date)
 * and leaves the rest alone.
 *
 *   php seed.php --url=http://127.0.0.1:8089 [--manifest=.wp-test/seed.json]
 *
 * The manifest lists every seeded item (id, type, status, url, marker words) for tests.
 *
 * Non-public items carry a unique marker word in title and body (SECRETDRAFT, ...) so tests
 * can grep for leaks, and the body alone also carries <MARKER>BODY (SECRETDRAFTBODY, ...).
 * For the password-protected items WordPress itself shows the title ("Protected: ...") on
 * public pages, in feeds, the REST API and the core sitemap; the body must never leak.
 * The members-only page is published without a password but redirects visitors to
 * wp-login.php (mu-members-only.php); the attachment hangs off the private post. Their
 * manifest entries say "public": false, as for the rest.
 */

if (PHP_SAPI !== 'cli') {
    exit(1);
}
if (!defined('ABSPATH')) {
    // Run on its own (install.php --seed includes it with WordPress already loaded).
    $opts = getopt('', array('url:', 'manifest::'));
    $askwpd_url = rtrim($opts['url'] ?? (getenv('SITE_URL') ?: ''), '/');
    if (!preg_match('#^https?://[^/]+$#', $askwpd_url)) {
        fwrite(STDERR, "seed.php: --url=http://HOST:PORT is required\n");
        exit(2);
    }
    $askwpd_manifest = $opts['manifest'] ?? '';

    require __DIR__ . '/cli-request.php';
    require askwpd_cli_request($askwpd_url);
}
require_once ABSPATH . 'wp-admin/includes/post.php';
require_once ABSPATH . 'wp-admin/includes/nav-menu.php';
require_once ABSPATH . 'wp-admin/includes/taxonomy.php';

function askwpd_log($msg) {
    fwrite(STDERR, "[wp] seed: $msg\n");
}

// ---------------------------------------------------------------------------
// Block markup helpers (WordPress 6.1 serialisation)
// ---------------------------------------------------------------------------
function b_p($html) {
    return "<!-- wp:paragraph -->\n<p>$html</p>\n<!-- /wp:paragraph -->\n\n";
}
function b_h($level, $text) {
    $attr = $level === 2 ? '' : ' {"level":' . $level . '}';
    return "<!-- wp:heading$attr -->\n<h$level>$text</h$level>\n<!-- /wp:heading -->\n\n";
}
function b_list(array $items, $ordered = false) {
    $tag = $ordered ? 'ol' : 'ul';
    $attr = $ordered ? ' {"ordered":true}' : '';
    $li = '';
    foreach ($items as $it) {
        $li .= "<!-- wp:list-item -->\n<li>$it</li>\n<!-- /wp:list-item -->";
    }
    return "<!-- wp:list$attr -->\n<$tag>$li</$tag>\n<!-- /wp:list -->\n\n";
}
function b_table(array $head, array $rows) {
    $h = '<thead><tr>';
    foreach ($head as $c) {
        $h .= "<th>$c</th>";
    }
    $h .= '</tr></thead><tbody>';
    foreach ($rows as $r) {
        $h .= '<tr>';
        foreach ($r as $c) {
            $h .= "<td>$c</td>";
        }
        $h .= '</tr>';
    }
    $h .= '</tbody>';
    return "<!-- wp:table -->\n<figure class=\"wp-block-table\"><table>$h</table></figure>\n<!-- /wp:table -->\n\n";
}
/** Code block; $lang adds the usual language hints (class="language-x", data-lang). */
function b_code($code, $lang = '') {
    $esc = htmlspecialchars(rtrim($code, "\n"), ENT_NOQUOTES, 'UTF-8');
    if ($lang === '') {
        return "<!-- wp:code -->\n<pre class=\"wp-block-code\"><code>$esc</code></pre>\n<!-- /wp:code -->\n\n";
    }
    return "<!-- wp:code {\"className\":\"language-$lang\"} -->\n<pre class=\"wp-block-code language-$lang\" data-lang=\"$lang\"><code lang=\"$lang\" class=\"language-$lang\">$esc</code></pre>\n<!-- /wp:code -->\n\n";
}
function b_quote($text, $cite) {
    return "<!-- wp:quote -->\n<blockquote class=\"wp-block-quote\"><!-- wp:paragraph -->\n<p>$text</p>\n<!-- /wp:paragraph --><cite>$cite</cite></blockquote>\n<!-- /wp:quote -->\n\n";
}
function b_sep() {
    return "<!-- wp:separator -->\n<hr class=\"wp-block-separator has-alpha-channel-opacity\"/>\n<!-- /wp:separator -->\n\n";
}

// ---------------------------------------------------------------------------
// Terms
// ---------------------------------------------------------------------------
$CATEGORIES = array(
    // slug => [name, parent slug, description]
    'coffee' => array('Coffee', '', 'Home roasting, brewing and grinder experiments.'),
    'self-hosting' => array('Self-Hosting', '', 'Running our own servers, small and cheap.'),
    'databases' => array('Databases', 'self-hosting', 'MariaDB and friends, backups and query tuning.'),
    'development' => array('Development', '', 'Code we wrote and what we learned from it.'),
    'kitchen' => array('Kitchen', '', 'Bread, ferments and other slow food.'),
    'garden' => array('Garden', '', 'Balcony growing and composting.'),
    'cycling' => array('Cycling', '', 'Commuting by bike, gear and repairs.'),
    'news' => array('News', '', 'Announcements about this site.'),
);

// ---------------------------------------------------------------------------
// Content
// ---------------------------------------------------------------------------
$PHP_POOL_CHECK = <<<'PHP'
<?php
// Drop this into each site's web root as pool-check.php, load it once, then delete it.
$user = posix_getpwuid(posix_geteuid());
printf("pool user: %s\n", $user['name']);
printf("open_basedir: %s\n", ini_get('open_basedir') ?: '(not set)');
printf("disable_functions: %s\n", ini_get('disable_functions') ?: '(none)');

$neighbour = '/srv/www/othersite/wp-config.php';
if (@is_readable($neighbour)) {
    echo "WARNING: this pool can read $neighbour\n";
} else {
    echo "ok: neighbouring sites are not readable\n";
}
PHP;

$FPM_POOL_INI = <<<'INI'
; /etc/php/8.2/fpm/pool.d/bakery.conf
[bakery]
user = bakery
group = bakery
listen = /run/php/bakery.sock
listen.owner = www-data
listen.group = www-data
pm = ondemand
pm.max_children = 6
pm.process_idle_timeout = 30s
php_admin_value[open_basedir] = /srv/www/bakery:/tmp
php_admin_value[disable_functions] = exec,passthru,shell_exec,system,proc_open,popen
INI;

$FPM_SHELL = <<<'SH'
$ sudo adduser --system --group --home /srv/www/bakery bakery
$ sudo chown -R bakery:bakery /srv/www/bakery
$ sudo php-fpm8.2 -t
[22-Mar-2025 10:14:03] NOTICE: configuration file /etc/php/8.2/fpm/php-fpm.conf test is successful
$ sudo systemctl reload php8.2-fpm
$ ps -o user,pid,cmd -C php-fpm8.2 | head -4
USER         PID CMD
root         812 php-fpm: master process (/etc/php/8.2/fpm/php-fpm.conf)
bakery      2291 php-fpm: pool bakery
www-data    2292 php-fpm: pool www
SH;

$CADDY_JSON = <<<'JSON'
{
  "apps": {
    "http": {
      "servers": {
        "main": {
          "listen": [":443"],
          "routes": [
            {
              "match": [{ "host": ["blog.example.org"] }],
              "handle": [
                {
                  "handler": "reverse_proxy",
                  "upstreams": [{ "dial": "127.0.0.1:8081" }],
                  "headers": {
                    "request": { "set": { "X-Forwarded-Proto": ["{http.request.scheme}"] } }
                  }
                }
              ]
            },
            {
              "match": [{ "host": ["shop.example.org"] }],
              "handle": [
                { "handler": "reverse_proxy", "upstreams": [{ "dial": "127.0.0.1:8082" }] }
              ]
            }
          ]
        }
      }
    }
  }
}
JSON;

$CADDY_SHELL = <<<'SH'
$ caddy validate --config /etc/caddy/caddy.json
2025/08/14 09:12:40.113 INFO    using provided configuration
Valid configuration
$ curl -sI https://blog.example.org | head -3
HTTP/2 200
content-type: text/html; charset=UTF-8
link: <https://blog.example.org/wp-json/>; rel="https://api.w.org/"
SH;

$BACKUP_SHELL = <<<'SH'
#!/bin/sh
# /usr/local/sbin/nightly-db-backup, run by cron at 02:30
set -eu
target=/var/backups/mariabackup/$(date +%F)
mariabackup --backup --target-dir="$target" --user=backup
mariabackup --prepare --target-dir="$target"
restic -r sftp:backup@nas.lan:/srv/restic backup "$target" --tag mariadb
restic -r sftp:backup@nas.lan:/srv/restic forget --tag mariadb --keep-daily 7 --keep-weekly 5 --prune
rm -rf "$target"
SH;

$RESTORE_SHELL = <<<'SH'
$ restic -r sftp:backup@nas.lan:/srv/restic snapshots --tag mariadb | tail -3
4f1c2a9e  2025-12-21 02:31:07  db1   mariadb  /var/backups/mariabackup/2025-12-21
81bd07d3  2025-12-22 02:30:58  db1   mariadb  /var/backups/mariabackup/2025-12-22
7 snapshots
$ restic -r sftp:backup@nas.lan:/srv/restic restore 81bd07d3 --target /srv/restore-test
$ sudo systemctl stop mariadb
$ sudo mariabackup --copy-back --target-dir=/srv/restore-test/var/backups/mariabackup/2025-12-22
SH;

$GO_LIMITER = <<<'GO'
package ratelimit

import (
	"sync"
	"time"
)

// Bucket is a token bucket: it holds at most Burst tokens and refills Rate tokens per second.
type Bucket struct {
	mu     sync.Mutex
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
}

func New(rate float64, burst int) *Bucket {
	return &Bucket{rate: rate, burst: float64(burst), tokens: float64(burst), last: time.Now()}
}

// Allow reports whether one request may pass now, and takes a token if so.
func (b *Bucket) Allow() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
GO;

$GO_TEST = <<<'GO'
$ go test -run TestBurst -v ./ratelimit
=== RUN   TestBurst
--- PASS: TestBurst (0.00s)
PASS
ok      example.org/ratelimit   0.004s
GO;

$GO_CLASSIC = <<<'GO'
func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: wordfreq FILE")
		os.Exit(2)
	}
	counts := map[string]int{}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		log.Fatal(err)
	}
	for _, w := range strings.Fields(strings.ToLower(string(data))) {
		counts[w]++
	}
	fmt.Println(len(counts), "distinct words")
}
GO;

$WPQUERY_PHP = <<<'PHP'
<?php
$events = new WP_Query( array(
	'post_type'      => 'event',
	'posts_per_page' => 20,
	'meta_query'     => array(
		'relation' => 'OR',
		array( 'key' => 'venue_city', 'value' => 'Leipzig', 'compare' => 'LIKE' ),
		array( 'key' => 'venue_region', 'value' => 'Saxony' ),
	),
	'orderby'        => 'meta_value',
	'meta_key'       => 'event_start',
) );
PHP;

$WPQUERY_FIX = <<<'PHP'
<?php
// Store the city in a taxonomy instead: term lookups use an index.
$events = new WP_Query( array(
	'post_type'      => 'event',
	'posts_per_page' => 20,
	'tax_query'      => array(
		array( 'taxonomy' => 'event_city', 'field' => 'slug', 'terms' => array( 'leipzig' ) ),
	),
	'meta_key'       => 'event_start',
	'orderby'        => 'meta_value',
	'no_found_rows'  => true,
) );
PHP;

$EXPLAIN = <<<'SQL'
MariaDB [wp]> EXPLAIN SELECT SQL_CALC_FOUND_ROWS wp_posts.ID FROM wp_posts
    -> INNER JOIN wp_postmeta ON ( wp_posts.ID = wp_postmeta.post_id ) ...;
+------+-------------+-------------+------+---------------+---------+---------+------+--------+----------------------------------------------+
| id   | select_type | table       | type | possible_keys | key     | key_len | ref  | rows   | Extra                                        |
+------+-------------+-------------+------+---------------+---------+---------+------+--------+----------------------------------------------+
|    1 | SIMPLE      | wp_postmeta | ALL  | post_id       | NULL    | NULL    | NULL | 412873 | Using where; Using temporary; Using filesort |
|    1 | SIMPLE      | wp_posts    | ref  | PRIMARY       | PRIMARY | 8       | func |      1 | Using where                                  |
+------+-------------+-------------+------+---------------+---------+---------+------+--------+----------------------------------------------+
SQL;

$LANTERN_JSON = <<<'JSON'
{
  "site": "demo",
  "index": {
    "post_types": ["post", "page"],
    "exclude_statuses": ["draft", "pending", "private", "future", "trash"],
    "chunk_tokens": 400
  },
  "answer": { "max_sources": 4, "show_citations": true }
}
JSON;

$FEDIVERSE_SHELL = <<<'SH'
$ sudo -u mastodon pg_dump -Fc mastodon_production > mastodon.dump
$ du -h mastodon.dump
1.9G    mastodon.dump
$ rsync -aP mastodon.dump live/.env.production new-vps:/home/mastodon/
$ ssh new-vps 'sudo -u mastodon pg_restore -d mastodon_production -j 2 mastodon.dump'
$ ssh new-vps 'cd live && RAILS_ENV=production bin/tootctl media remove --days 7'
Removed 14 233 media attachments (approx. 11.2 GB)
SH;

$POSTS = array(
    array(
        'key' => 'roasting-yirgacheffe-popcorn-popper',
        'title' => 'Roasting Ethiopian Yirgacheffe in a Popcorn Popper',
        'days' => 690, 'author' => 'mara', 'cats' => array('coffee'), 'tags' => array('roasting', 'ethiopia'),
        'excerpt' => 'A twenty-euro hot air popcorn popper roasts a fine batch of washed Yirgacheffe if you watch the cracks, not the clock.',
        'content' =>
            b_p('Our first home roasts came out of a secondhand hot air popcorn popper bought at a flea market for twenty euros. It is loud, it has no controls, and it still produced the best washed Yirgacheffe we have had in months. This post is the method we settled on after about forty batches.')
            . b_h(2, 'What you need')
            . b_list(array('A hot air popcorn popper with side vents (not the kind with a flat mesh bottom)', '80 to 90 grams of green coffee per batch', 'A metal colander and a second one for cooling', 'A kitchen timer and, ideally, an open window'))
            . b_h(2, 'Timing the cracks')
            . b_p('Washed Ethiopian beans are small and dense, so they move slowly at first. Stir with a wooden spoon for the first ninety seconds until the chaff starts to fly. After that, listen. First crack sounds like popcorn; second crack sounds like rice cereal in milk.')
            . b_table(array('Stage', 'Time from start', 'What you see'), array(
                array('Drying', '0:00 to 2:30', 'Beans turn from green to yellow, grassy smell'),
                array('Browning', '2:30 to 4:15', 'Cinnamon colour, smell of toasted bread'),
                array('First crack', '4:15 to 5:30', 'Loud pops, chaff everywhere'),
                array('Stop (light roast)', 'about 6:00', 'Even light brown, no oil on the surface'),
            ))
            . b_h(3, 'Cooling quickly')
            . b_p('Dump the beans into a colander and pour them back and forth between two colanders outside for two minutes. Slow cooling bakes the roast and flattens the jasmine and bergamot notes that make Yirgacheffe worth the trouble.')
            . b_quote('Roast for the cup you want tomorrow, not for the colour you want today.', 'A roaster we met in Leipzig')
            . b_p('Let the beans rest for at least two days before brewing. We liked them best on day four, as a pour-over at 93 °C.'),
    ),
    array(
        'key' => 'php-fpm-per-site-pool-users',
        'title' => 'Hardening PHP-FPM Pools with Per-Site Unix Users',
        'days' => 610, 'author' => 'admin', 'cats' => array('self-hosting'), 'tags' => array('php', 'security', 'shell'),
        'excerpt' => 'One PHP-FPM pool and one Unix user per site keeps a hacked plugin on one site from reading the database password of the next.',
        'content' =>
            b_p('We host five small WordPress sites for friends on one VPS. Until last spring they all ran in the default <code>www</code> pool as <code>www-data</code>, which means a vulnerable plugin on any of them could read every other site\'s <code>wp-config.php</code>. Splitting them into one pool per site took an evening.')
            . b_h(2, 'One pool per site')
            . b_p('Each site gets a system user, a socket and an <code>open_basedir</code> restriction. The pool file for the bakery site looks like this:')
            . b_code($FPM_POOL_INI, 'ini')
            . b_h(2, 'Creating the user and reloading')
            . b_code($FPM_SHELL)
            . b_h(2, 'Checking the isolation from PHP')
            . b_p('A tiny script confirms what the pool can and cannot see. Put it in one site and point <code>$neighbour</code> at another site\'s config:')
            . b_code($PHP_POOL_CHECK, 'php')
            . b_h(3, 'Things that broke')
            . b_list(array('Image uploads failed until <code>/tmp</code> was added to <code>open_basedir</code>.', 'A backup plugin used <code>exec()</code> to call <code>mysqldump</code>; we replaced it with a cron job.', 'Nginx needed each site\'s <code>fastcgi_pass</code> pointed at the new socket.')),
    ),
    array(
        'key' => 'gofmt-ended-tabs-versus-spaces',
        'title' => 'Gofmt Ended Our Tabs Versus Spaces Argument',
        'days' => 560, 'author' => 'admin', 'cats' => array('development'), 'tags' => array('go'),
        'classic' => true,
        'excerpt' => 'An old post from before the block editor: how a formatter settled an office argument.',
        'content' =>
            "For three years our small team argued about indentation in code review. Then we started a Go project, and the argument simply stopped: <code>gofmt</code> decides, and nobody configures it.\n\n"
            . "<h2>The program that started it</h2>\n"
            . "It was a throwaway word counter for our newsletter archive. Here is the heart of it, exactly as gofmt left it (tabs, of course):\n\n"
            . '<pre lang="go">' . htmlspecialchars($GO_CLASSIC, ENT_NOQUOTES, 'UTF-8') . "</pre>\n\n"
            . "<h3>What we took from it</h3>\n"
            . "<ul>\n<li>A formatter with no options ends style debates faster than a style guide.</li>\n<li>Run it on save, and in CI with <code>gofmt -l</code>.</li>\n<li>Review comments got shorter and kinder.</li>\n</ul>\n\n"
            . "This post was written in the classic editor and has no block markup.",
    ),
    array(
        'key' => 'mastodon-instance-cheaper-vps',
        'title' => 'Moving a Small Mastodon Instance to a Cheaper VPS',
        'days' => 520, 'author' => 'admin', 'cats' => array('self-hosting'), 'tags' => array('mastodon', 'shell'),
        'excerpt' => 'Our twelve-person Mastodon server moved to a VPS at a third of the price; the database dump was the easy part.',
        'content' =>
            b_p('Our Mastodon server has twelve active accounts and, after two years, 60 GB of cached remote media. The old VPS cost 24 euros a month; the new one costs 8. The move took a Saturday morning.')
            . b_h(2, 'The steps')
            . b_list(array('Lower the DNS TTL a day ahead.', 'Stop Sidekiq and the web process, dump PostgreSQL.', 'Copy the dump and <code>.env.production</code>, restore with two jobs.', 'Prune cached media before copying anything else.', 'Switch DNS, start services, watch the logs.'), true)
            . b_code($FEDIVERSE_SHELL)
            . b_h(2, 'What we would do differently')
            . b_p('Prune remote media weeks earlier, and move it to object storage before the migration rather than after. Copying 60 GB of other people\'s cat pictures was the slowest part of the day.'),
    ),
    array(
        'key' => 'caddy-json-reverse-proxy-wordpress',
        'title' => 'Caddy JSON Config for a Reverse Proxy in Front of WordPress',
        'days' => 465, 'author' => 'admin', 'cats' => array('self-hosting'), 'tags' => array('caddy', 'json'),
        'excerpt' => 'Caddy\'s native JSON config is verbose but explicit; here is the one we use for two WordPress sites behind one proxy.',
        'content' =>
            b_p('Most Caddy guides use the Caddyfile. We generate our proxy config from a script, so we use Caddy\'s native JSON format instead: more verbose, but every field is explicit and easy to template.')
            . b_h(2, 'The config')
            . b_code($CADDY_JSON, 'json')
            . b_p('The <code>X-Forwarded-Proto</code> header matters: without it WordPress behind the proxy thinks it is on plain HTTP and builds redirect loops. Debian\'s WordPress package even checks that header in its <code>wp-config.php</code>.')
            . b_h(2, 'Validating and testing')
            . b_code($CADDY_SHELL)
            . b_h(3, 'Certificates')
            . b_p('Caddy obtains and renews the certificates on its own as long as ports 80 and 443 reach it. We keep a copy of <code>/var/lib/caddy</code> in the nightly backup so a rebuild does not hit the rate limits.'),
    ),
    array(
        'key' => 'sourdough-starter-hooch-mold',
        'title' => 'Sourdough Starter Troubleshooting: Hooch, Mold and Sluggish Rises',
        'days' => 400, 'author' => 'mara', 'cats' => array('kitchen'), 'tags' => array('sourdough', 'fermentation'),
        'excerpt' => 'Grey liquid on top is hunger, pink streaks are the end: a field guide to a sulking sourdough starter.',
        'content' =>
            b_p('Our rye starter, Brunhilde, is six years old and has survived two moves and a three-week holiday in the fridge. Along the way she has shown every symptom in this list.')
            . b_h(2, 'Symptoms and fixes')
            . b_table(array('Symptom', 'Likely cause', 'Fix'), array(
                array('Grey liquid (hooch) on top', 'Hungry starter', 'Pour it off, feed 1:2:2'),
                array('Smells like nail polish', 'Very hungry, acetone from stressed yeast', 'Two feeds a day for two days'),
                array('Barely rises after feeding', 'Cold kitchen or weak flour', 'Keep at 26 °C, add 20 % whole rye'),
                array('Fuzzy spots or pink streaks', 'Mold or bacteria', 'Throw it out, start again'),
            ))
            . b_h(2, 'Reviving a neglected starter')
            . b_list(array('Take one spoonful from the middle of the jar.', 'Feed it 50 g flour and 50 g water at 26 °C.', 'Repeat every 12 hours, discarding all but one spoonful.', 'Bake when it doubles within six hours, three feeds in a row.'), true)
            . b_h(3, 'Flour matters more than water')
            . b_p('We tested tap water against filtered water for a month and saw no difference. Switching from white flour to 20 % whole rye, on the other hand, doubled the rise speed within a week.'),
    ),
    array(
        'key' => 'nightly-mariadb-backups-mariabackup-restic',
        'title' => 'Nightly MariaDB Backups with mariabackup and Restic',
        'days' => 330, 'author' => 'admin', 'cats' => array('databases'), 'tags' => array('mariadb', 'backups', 'shell'),
        'excerpt' => 'A seven-line cron script makes consistent physical backups of MariaDB and ships them, deduplicated, to the NAS.',
        'content' =>
            b_p('<code>mysqldump</code> served us well until the database passed 20 GB and the dump started to take longer than the night. Physical backups with <code>mariabackup</code> take four minutes, and restic deduplicates them so a week of nightly copies costs little more than one.')
            . b_h(2, 'The cron script')
            . b_code($BACKUP_SHELL, 'bash')
            . b_h(2, 'Restoring, for real')
            . b_p('A backup is only a hope until you restore it. Once a month we restore the latest snapshot onto a scratch machine:')
            . b_code($RESTORE_SHELL)
            . b_h(3, 'Grants for the backup user')
            . b_p('The <code>backup</code> account needs <code>RELOAD</code>, <code>PROCESS</code>, <code>LOCK TABLES</code> and <code>BINLOG MONITOR</code>, and nothing else.'),
    ),
    array(
        'key' => 'espresso-grinder-retention-kitchen-scale',
        'title' => 'Measuring Espresso Grinder Retention with a Kitchen Scale',
        'days' => 260, 'author' => 'mara', 'cats' => array('coffee'), 'tags' => array('espresso', 'grinders'),
        'excerpt' => 'Weigh the beans in, weigh the grounds out: our three grinders kept between 0.1 and 2.4 grams.',
        'content' =>
            b_p('Grinder retention is the coffee that stays inside the burrs and chute after you grind. It goes stale and ends up in your next shot. We measured it on the three grinders in our kitchen with a 0.1 g scale.')
            . b_h(2, 'Method')
            . b_list(array('Purge with 5 g of beans and discard.', 'Weigh exactly 18.0 g of beans.', 'Grind, tap the chute twice, weigh the output.', 'Repeat five times and average.'), true)
            . b_h(2, 'Results')
            . b_table(array('Grinder', 'Beans in', 'Grounds out (avg)', 'Retention'), array(
                array('Conical hand grinder', '18.0 g', '17.9 g', '0.1 g'),
                array('Single-dose flat burr', '18.0 g', '17.7 g', '0.3 g'),
                array('Old doserless hopper grinder', '18.0 g', '15.6 g', '2.4 g'),
            ))
            . b_p('The old hopper grinder surprised us. 2.4 g is more than ten percent of a double shot, and it is yesterday\'s coffee. A bellows on the hopper brought it down to 0.8 g.'),
    ),
    array(
        'key' => 'token-bucket-rate-limiter-go',
        'title' => 'A Token Bucket Rate Limiter in Forty Lines of Go',
        'days' => 190, 'author' => 'admin', 'cats' => array('development'), 'tags' => array('go', 'performance'),
        'excerpt' => 'The token bucket behind our contact form, in forty lines of Go with a mutex and no goroutines.',
        'content' =>
            b_p('Spam bots found our contact form, and we did not want to add a third-party service just to slow them down. A token bucket per IP address, kept in memory, was enough.')
            . b_h(2, 'The bucket')
            . b_p('Tokens refill continuously at a fixed rate up to a burst limit; each request takes one. There is no background goroutine: the refill is computed from the time since the last call.')
            . b_code($GO_LIMITER, 'go')
            . b_h(2, 'Testing it')
            . b_code($GO_TEST)
            . b_h(3, 'Choosing the numbers')
            . b_p('We allow a burst of 3 messages and refill one every 10 minutes per address. Real visitors never noticed; the bots gave up within a day.'),
    ),
    array(
        'key' => 'balcony-worm-farm-coffee-grounds',
        'title' => 'Feeding Coffee Grounds to a Balcony Worm Farm',
        'days' => 130, 'author' => 'mara', 'cats' => array('garden'), 'tags' => array('compost', 'worms'),
        'excerpt' => 'Red wigglers love spent coffee grounds, up to about a quarter of what they eat.',
        'content' =>
            b_p('We make a lot of coffee, and for years the spent grounds went into the bin. Now they feed about two thousand red wigglers in a stacking worm farm on our north-facing balcony.')
            . b_h(2, 'How much coffee is too much')
            . b_p('Grounds are slightly acidic and rich in nitrogen. Our worms handle them well as long as they stay under a quarter of the weekly food, mixed with shredded cardboard.')
            . b_list(array('Good: grounds, paper filters, vegetable peel, eggshells crushed to powder.', 'Careful: citrus and onion, in small amounts.', 'Never: meat, dairy, oil, salty leftovers.'))
            . b_h(2, 'Through the seasons')
            . b_p('In summer the top tray dries out, so we cover it with wet newspaper. In winter we move the farm next to the kitchen door, where it stays above 8 °C. The castings go to the tomato and chili pots every spring.'),
    ),
    array(
        'key' => 'slow-wp-query-meta-query',
        'title' => 'Finding a Slow WP_Query Hidden in a Meta Query',
        'days' => 75, 'author' => 'admin', 'cats' => array('development', 'databases'), 'tags' => array('php', 'performance', 'mariadb'),
        'excerpt' => 'An OR meta query with LIKE made an events page take four seconds; a taxonomy made it take forty milliseconds.',
        'content' =>
            b_p('A friend\'s events site took four seconds to render its city pages. The slow query log pointed at one <code>WP_Query</code> with a meta query:')
            . b_code($WPQUERY_PHP, 'php')
            . b_h(2, 'What MariaDB did with it')
            . b_code($EXPLAIN, 'sql')
            . b_p('The <code>LIKE</code> on <code>meta_value</code> and the <code>OR</code> between two keys force a scan of the whole postmeta table: over 400,000 rows for 20 events.')
            . b_h(2, 'The fix')
            . b_p('Cities are a fixed list, so they belong in a taxonomy. After a one-off migration the query became:')
            . b_code($WPQUERY_FIX, 'php')
            . b_table(array('Version', 'Query time', 'Page time'), array(
                array('Meta query with LIKE', '3.8 s', '4.1 s'),
                array('Taxonomy query', '0.01 s', '0.04 s'),
            )),
    ),
    array(
        'key' => 'bicycle-commuter-lighting-kit',
        'title' => 'A Bicycle Commuter Lighting Kit for Under Sixty Euros',
        'days' => 30, 'author' => 'mara', 'cats' => array('cycling'), 'tags' => array('lighting', 'commuting'),
        'excerpt' => 'Dynamo front light, standlight rear, reflective tape and a helmet light: a winter commute kit for 58 euros.',
        'content' =>
            b_p('The commute to the roastery is 11 km each way, and from November to February most of it is in the dark. Battery lights kept running flat, so we rebuilt the lighting around the hub dynamo that was already on the bike.')
            . b_h(2, 'Parts list')
            . b_table(array('Part', 'Price', 'Notes'), array(
                array('Dynamo front light, 60 lux', '26 €', 'Standlight, sensor switch'),
                array('Dynamo rear light with standlight', '14 €', 'Mounts on the rack'),
                array('Reflective tape for rims and cranks', '7 €', 'Seen from the side'),
                array('USB helmet light', '11 €', 'For looking into turns'),
                array('<strong>Total</strong>', '<strong>58 €</strong>', ''),
            ))
            . b_h(2, 'Wiring tips')
            . b_list(array('Run the wire along the brake cable with small zip ties.', 'Use the frame as ground only if the light says so; most modern lights want two wires.', 'Solder and heat-shrink the connector at the hub.'))
            . b_p('After two winters the only failure was a chafed wire at the fork crown. A piece of old inner tube fixed that.'),
    ),
    array(
        'key' => 'relaunch-notes-lantern-search',
        'title' => 'Relaunch Notes: Lantern Search Arrives on the Demo Site',
        'hours' => 3, 'author' => 'admin', 'cats' => array('news'), 'tags' => array('announcements', 'json'),
        'excerpt' => 'The site has a new theme, faster pages and Lantern, a search that answers questions from our own posts.',
        'content' =>
            b_p('Today we relaunched the site. The theme is simpler, pages load faster, and there is a new search box called Lantern that answers questions using only what we have written here, with links to the posts it used.')
            . b_h(2, 'What changed')
            . b_list(array('A block theme with fewer scripts.', 'Lantern search, which cites its sources.', 'Older posts, like the <a href="/about/">About page</a> and the backup guide, were checked and updated.'))
            . b_h(2, 'How Lantern is configured')
            . b_p('For the curious, this is the configuration it runs with. Drafts and private notes are never indexed:')
            . b_code($LANTERN_JSON, 'json')
            . b_h(3, 'Feedback')
            . b_p('If Lantern gives a wrong or strange answer, tell us through the <a href="/contact/">contact page</a>.'),
    ),
);

$PAGES = array(
    array(
        'key' => 'about', 'title' => 'About This Workshop Journal', 'order' => 1,
        'content' =>
            b_p('This is the journal of a small workshop in Leipzig where two people roast coffee, bake bread, fix bicycles and run a few servers for friends. We write down what worked and, more often, what did not.')
            . b_h(2, 'Who writes here')
            . b_p('Mara Lindqvist writes about coffee, the kitchen and the garden. Jonas Berger writes about servers and code. Both of us argue about grinders.')
            . b_h(2, 'Why a journal')
            . b_list(array('Notes we can search later instead of relearning things.', 'A place to show friends how we set things up.', 'An excuse to measure things properly.')),
    ),
    array(
        'key' => 'team', 'title' => 'Meet the Roasting and Repair Crew', 'parent' => 'about', 'order' => 1,
        'content' =>
            b_p('The crew is small: two people and a rotating cast of neighbours who borrow tools.')
            . b_h(2, 'Mara Lindqvist')
            . b_p('Roaster, baker, keeper of Brunhilde the rye starter. Mara measures everything twice and writes the numbers down.')
            . b_h(2, 'Jonas Berger')
            . b_p('Runs the servers, writes the occasional Go program and rides the dynamo-lit commuter bike in all weather.'),
    ),
    array(
        'key' => 'contact', 'title' => 'Contact and Visiting Hours', 'order' => 3,
        'content' =>
            b_p('Write to <a href="mailto:hello@example.com">hello@example.com</a>. We answer within two working days.')
            . b_h(2, 'Visiting the workshop')
            . b_table(array('Day', 'Hours'), array(
                array('Tuesday to Friday', '10:00 to 18:00'),
                array('Saturday', '10:00 to 14:00'),
                array('Sunday and Monday', 'Closed'),
            ))
            . b_p('The workshop is in the courtyard of Lindenstraße 14, second door on the left. Please ring the bell marked "Werkstatt".'),
    ),
    array(
        'key' => 'pricing-faq', 'title' => 'Pricing and Frequently Asked Questions', 'order' => 4,
        'content' =>
            b_p('We sell small batches of roasted coffee and run hands-on evenings. Prices include VAT.')
            . b_h(2, 'Prices')
            . b_table(array('Item', 'Price'), array(
                array('Coffee, 250 g, roasted to order', '9.50 €'),
                array('Coffee subscription, 500 g every two weeks', '34 € per month'),
                array('Bicycle light installation', '25 € plus parts'),
            ))
            . b_h(2, 'Frequently asked questions')
            . b_h(3, 'How fresh is the coffee?')
            . b_p('We roast on Tuesdays and Fridays and ship the same day. Every bag carries its roast date.')
            . b_h(3, 'Can I cancel the subscription?')
            . b_p('Yes, at any time, by email. The current period is not refunded.')
            . b_h(3, 'Do you ship outside Germany?')
            . b_p('Within the EU only, for a flat 6 € per parcel.'),
    ),
    array(
        'key' => 'workshops', 'title' => 'Workshops', 'order' => 5,
        'content' => b_p('Coming soon.'),
    ),
);

// Non-public items: one of each kind. Marker words appear in title and body.
$SECRETS = array(
    array('key' => 'secret-draft', 'type' => 'post', 'status' => 'draft', 'marker' => 'SECRETDRAFT',
        'title' => 'SECRETDRAFT Cold Brew Subscription Launch Plan',
        'body' => 'SECRETDRAFT: internal plan for a cold brew subscription, not announced yet. Price point 12 euros per litre.'),
    array('key' => 'secret-pending', 'type' => 'post', 'status' => 'pending', 'marker' => 'SECRETPENDING',
        'title' => 'SECRETPENDING Guest Review of a Hand Grinder',
        'body' => 'SECRETPENDING: a guest review waiting for an editor. The grinder was sent to us for free.'),
    array('key' => 'secret-private', 'type' => 'post', 'status' => 'private', 'marker' => 'SECRETPRIVATE',
        'title' => 'SECRETPRIVATE Supplier Price List Notes',
        'body' => 'SECRETPRIVATE: green coffee supplier prices for next season, for our eyes only.'),
    array('key' => 'secret-future', 'type' => 'post', 'status' => 'future', 'marker' => 'SECRETFUTURE', 'days' => -365,
        'title' => 'SECRETFUTURE Anniversary Giveaway Announcement',
        'body' => 'SECRETFUTURE: scheduled for next year, the anniversary giveaway of a hand grinder.'),
    array('key' => 'secret-trash', 'type' => 'post', 'status' => 'trash', 'marker' => 'SECRETTRASH',
        'title' => 'SECRETTRASH Retracted Bean Recall Rumor',
        'body' => 'SECRETTRASH: a post about a bean recall that turned out to be a rumour, deleted.'),
    array('key' => 'secret-autodraft', 'type' => 'post', 'status' => 'auto-draft', 'marker' => 'SECRETAUTODRAFT',
        'title' => 'SECRETAUTODRAFT Untitled Autosave Fragment',
        'body' => 'SECRETAUTODRAFT: an editor window opened and never saved.'),
    array('key' => 'secret-password-post', 'type' => 'post', 'status' => 'publish', 'password' => 'askwpd-pass', 'marker' => 'SECRETPASSWORDPOST',
        'title' => 'SECRETPASSWORDPOST Wholesale Partner Roadmap',
        'body' => 'SECRETPASSWORDPOST: wholesale roadmap for partner cafés, shared with a password.'),
    array('key' => 'secret-password-page', 'type' => 'page', 'status' => 'publish', 'password' => 'askwpd-pass', 'marker' => 'SECRETPASSWORDPAGE',
        'title' => 'SECRETPASSWORDPAGE Staff Handbook',
        'body' => 'SECRETPASSWORDPAGE: the staff handbook, with the alarm code procedure.'),
    // Published, no password, but its template sends visitors to wp-login.php (the
    // mu-plugin scripts/wp/mu-members-only.php, which wp-up.sh installs).
    array('key' => 'secret-members-page', 'type' => 'page', 'status' => 'publish', 'slug' => 'members-lounge',
        'template' => 'askwpd-members-only', 'marker' => 'SECRETMEMBERSPAGE',
        'title' => 'SECRETMEMBERSPAGE Members Lounge Tasting Schedule',
        'body' => 'SECRETMEMBERSPAGE: the members-only tasting schedule and the door code for the back room.'),
    // An image attached to the private post: its attachment page inherits the parent's status,
    // so WordPress answers 404 to visitors. (Attachment pages of published or unattached
    // media are public in this WordPress, 6.1; wp_attachment_pages_enabled came in 6.4.)
    array('key' => 'secret-attachment', 'type' => 'attachment', 'status' => 'inherit', 'slug' => 'roastery-floor-plan',
        'parent' => 'secret-private', 'file' => 'askwpd-seed/roastery-floor-plan.png', 'marker' => 'SECRETATTACHMENT',
        'title' => 'SECRETATTACHMENT Roastery Floor Plan Scan',
        'caption' => 'SECRETATTACHMENT caption: where the green coffee sacks are stored.',
        'body' => 'SECRETATTACHMENT: a scan of the roastery floor plan, attached to the supplier notes.'),
);

/** Whether a seeded item is on a page WordPress shows visitors. */
function askwpd_seed_public(WP_Post $p) {
    if ($p->post_type === 'attachment') {
        return get_post_status($p) === 'publish'; // inherit: the parent's status
    }
    return $p->post_status === 'publish' && $p->post_password === ''
        && get_page_template_slug($p) !== 'askwpd-members-only';
}

// ---------------------------------------------------------------------------
// Engine
// ---------------------------------------------------------------------------
global $wpdb;
$askwpd_admin = get_user_by('login', 'admin');
if (!$askwpd_admin) {
    askwpd_log('no admin user; run install.php first');
    exit(1);
}
// Administrators have unfiltered_html, so kses keeps data-lang, <pre lang> etc. as written.
wp_set_current_user($askwpd_admin->ID);

$askwpd_changed = 0;

// Second author.
$askwpd_mara = get_user_by('login', 'mara');
if (!$askwpd_mara) {
    $id = wp_insert_user(array(
        'user_login' => 'mara', 'user_pass' => wp_generate_password(24, false), 'user_email' => 'mara@example.com',
        'display_name' => 'Mara Lindqvist', 'first_name' => 'Mara', 'last_name' => 'Lindqvist', 'role' => 'author',
    ));
    if (is_wp_error($id)) {
        askwpd_log('cannot create user mara: ' . $id->get_error_message());
        exit(1);
    }
    $askwpd_mara = get_user_by('id', $id);
    $askwpd_changed++;
}
$askwpd_authors = array('admin' => $askwpd_admin->ID, 'mara' => $askwpd_mara->ID);

// Categories (parents first: the array is ordered that way).
$askwpd_cat_ids = array();
foreach ($CATEGORIES as $slug => $c) {
    $t = get_term_by('slug', $slug, 'category');
    $parent = $c[1] !== '' ? $askwpd_cat_ids[$c[1]] : 0;
    if (!$t) {
        $r = wp_insert_term($c[0], 'category', array('slug' => $slug, 'parent' => $parent, 'description' => $c[2]));
        if (is_wp_error($r)) {
            askwpd_log("category $slug: " . $r->get_error_message());
            exit(1);
        }
        $askwpd_cat_ids[$slug] = (int) $r['term_id'];
        $askwpd_changed++;
    } else {
        $askwpd_cat_ids[$slug] = (int) $t->term_id;
        if ((int) $t->parent !== $parent || $t->name !== $c[0] || $t->description !== $c[2]) {
            wp_update_term($t->term_id, 'category', array('name' => $c[0], 'parent' => $parent, 'description' => $c[2]));
            $askwpd_changed++;
        }
    }
}

// Existing seeded objects: key => [post id, hash].
$askwpd_existing = array();
foreach ($wpdb->get_results("SELECT m.post_id, m.meta_value AS k, h.meta_value AS h FROM {$wpdb->postmeta} m LEFT JOIN {$wpdb->postmeta} h ON h.post_id = m.post_id AND h.meta_key = '_askwpd_seed_hash' WHERE m.meta_key = '_askwpd_seed'") as $r) {
    if (get_post((int) $r->post_id)) {
        $askwpd_existing[$r->k] = array((int) $r->post_id, (string) $r->h);
    }
}

/**
 * Inserts or updates one seeded post. $spec: key, type, status, title, content, excerpt,
 * author, date_gmt (used on insert only), parent (id), order, password, cats (ids), tags.
 */
function askwpd_upsert(array $spec) {
    global $askwpd_existing, $askwpd_changed;
    $hashed = $spec;
    unset($hashed['date_gmt']);
    $hash = md5(serialize($hashed));
    $key = $spec['key'];
    $want_status = $spec['status'];
    $id = 0;
    if (isset($askwpd_existing[$key])) {
        list($id, $old_hash) = $askwpd_existing[$key];
        $cur = get_post($id);
        if ($old_hash === $hash && $cur && $cur->post_status === $want_status) {
            return $id;
        }
    }
    $arr = array(
        'post_type' => $spec['type'],
        'post_title' => $spec['title'],
        'post_name' => $spec['slug'] ?? $key,
        'post_content' => $spec['content'],
        'post_excerpt' => $spec['excerpt'] ?? '',
        'post_author' => $spec['author'],
        'post_parent' => $spec['parent'] ?? 0,
        'menu_order' => $spec['order'] ?? 0,
        'post_password' => $spec['password'] ?? '',
        'post_mime_type' => $spec['mime'] ?? '',
        'comment_status' => $spec['type'] === 'post' ? 'open' : 'closed',
        'ping_status' => 'closed',
        'post_status' => $want_status === 'trash' ? 'draft' : $want_status,
    );
    if ($want_status === 'auto-draft') {
        $arr['post_name'] = ''; // WordPress never gives auto-drafts a slug
    }
    if (isset($spec['cats'])) {
        $arr['post_category'] = $spec['cats'];
    }
    if (isset($spec['tags'])) {
        $arr['tags_input'] = $spec['tags'];
    }
    if ($id) {
        $arr['ID'] = $id;
        $r = wp_update_post(wp_slash($arr), true);
        $verb = 'updated';
    } else {
        $arr['post_date_gmt'] = $spec['date_gmt'];
        $arr['post_date'] = get_date_from_gmt($spec['date_gmt']);
        $r = wp_insert_post(wp_slash($arr), true);
        $verb = 'inserted';
    }
    if (is_wp_error($r) || !$r) {
        askwpd_log("$key: " . (is_wp_error($r) ? $r->get_error_message() : 'failed'));
        exit(1);
    }
    $id = (int) $r;
    foreach ($spec['meta'] ?? array() as $k => $v) {
        update_post_meta($id, $k, $v);
    }
    update_post_meta($id, '_askwpd_seed', $key);
    update_post_meta($id, '_askwpd_seed_hash', $hash);
    if ($want_status === 'trash' && get_post_status($id) !== 'trash') {
        wp_trash_post($id);
    }
    $askwpd_existing[$key] = array($id, $hash);
    $askwpd_changed++;
    askwpd_log("$verb {$spec['type']} $key ($want_status)");
    return $id;
}

$askwpd_now = time();
$askwpd_ids = array();

foreach ($POSTS as $p) {
    $ago = isset($p['hours']) ? $p['hours'] * 3600 : $p['days'] * 86400 + 3600 * 7;
    $cats = array();
    foreach ($p['cats'] as $c) {
        $cats[] = $askwpd_cat_ids[$c];
    }
    $askwpd_ids[$p['key']] = askwpd_upsert(array(
        'key' => $p['key'], 'type' => 'post', 'status' => 'publish', 'title' => $p['title'],
        'content' => $p['content'], 'excerpt' => $p['excerpt'], 'author' => $askwpd_authors[$p['author']],
        'date_gmt' => gmdate('Y-m-d H:i:s', $askwpd_now - $ago), 'cats' => $cats, 'tags' => $p['tags'],
    ));
}
foreach ($PAGES as $i => $p) {
    $askwpd_ids[$p['key']] = askwpd_upsert(array(
        'key' => $p['key'], 'type' => 'page', 'status' => 'publish', 'title' => $p['title'],
        'content' => $p['content'], 'author' => $askwpd_admin->ID, 'order' => $p['order'],
        'parent' => isset($p['parent']) ? $askwpd_ids[$p['parent']] : 0,
        'date_gmt' => gmdate('Y-m-d H:i:s', $askwpd_now - (700 - 3 * $i) * 86400),
    ));
}
foreach ($SECRETS as $s) {
    $days = $s['days'] ?? 20;
    $spec = array(
        'key' => $s['key'], 'type' => $s['type'], 'status' => $s['status'], 'title' => $s['title'],
        'content' => b_p($s['body']) . b_p('This text must never appear on a public page: ' . $s['marker'] . 'BODY.'),
        'excerpt' => $s['marker'] . ' excerpt.', 'author' => $askwpd_admin->ID,
        'password' => $s['password'] ?? '',
        'date_gmt' => gmdate('Y-m-d H:i:s', $askwpd_now - $days * 86400),
    );
    if ($s['type'] === 'post') {
        $spec['cats'] = array($askwpd_cat_ids['news']);
        $spec['tags'] = array('internal');
    }
    // Only the newer kinds set these keys, so the older items' hashes stay as they were.
    if (isset($s['slug'])) {
        $spec['slug'] = $s['slug'];
    }
    if (isset($s['template'])) {
        // Meta rather than page_template: that one needs the mu-plugin loaded to validate.
        $spec['meta'] = array('_wp_page_template' => $s['template']);
    }
    if (isset($s['parent'])) {
        $spec['parent'] = $askwpd_ids[$s['parent']];
    }
    if ($s['type'] === 'attachment') {
        $spec['content'] = b_p($s['body']) . b_p('This text must never appear on a public page: ' . $s['marker'] . 'BODY.');
        $spec['excerpt'] = $s['caption']; // the caption
        $spec['mime'] = 'image/png';
        $spec['meta'] = array('_wp_attached_file' => $s['file'], '_wp_attachment_image_alt' => $s['marker'] . ' alt text');
        $path = wp_upload_dir(null, false)['basedir'] . '/' . $s['file'];
        if (!is_file($path)) {
            wp_mkdir_p(dirname($path));
            // A 1x1 PNG: the image carries no text; the marker is in its title, caption and description.
            file_put_contents($path, base64_decode('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=='));
            $askwpd_changed++;
        }
    }
    $askwpd_ids[$s['key']] = askwpd_upsert($spec);
    if ($s['type'] === 'attachment' && !wp_get_attachment_metadata($askwpd_ids[$s['key']])) {
        require_once ABSPATH . 'wp-admin/includes/image.php';
        wp_update_attachment_metadata($askwpd_ids[$s['key']], wp_generate_attachment_metadata($askwpd_ids[$s['key']], $path));
        $askwpd_changed++;
    }
}

// Classic nav menu: pages (with the child nested), a category and a custom link.
$askwpd_menu_name = 'Main Menu';
$askwpd_menu = wp_get_nav_menu_object($askwpd_menu_name);
$askwpd_menu_id = $askwpd_menu ? (int) $askwpd_menu->term_id : 0;
if (!$askwpd_menu_id) {
    $r = wp_create_nav_menu($askwpd_menu_name);
    if (is_wp_error($r)) {
        askwpd_log('menu: ' . $r->get_error_message());
        exit(1);
    }
    $askwpd_menu_id = (int) $r;
    $askwpd_changed++;
}
$askwpd_menu_items = array(
    // key, type, object, object id, title, parent key, url
    array('menu-about', 'post_type', 'page', $askwpd_ids['about'], 'About', '', ''),
    array('menu-team', 'post_type', 'page', $askwpd_ids['team'], 'Team', 'menu-about', ''),
    array('menu-coffee', 'taxonomy', 'category', $askwpd_cat_ids['coffee'], 'Coffee', '', ''),
    array('menu-pricing', 'post_type', 'page', $askwpd_ids['pricing-faq'], 'Pricing & FAQ', '', ''),
    array('menu-contact', 'post_type', 'page', $askwpd_ids['contact'], 'Contact', '', ''),
    array('menu-feed', 'custom', 'custom', 0, 'RSS Feed', '', '/feed/'),
);
$askwpd_have = array();
foreach ((array) wp_get_nav_menu_items($askwpd_menu_id, array('post_status' => 'any')) as $it) {
    $k = get_post_meta($it->ID, '_askwpd_seed_menu', true);
    if ($k) {
        $askwpd_have[$k] = (int) $it->ID;
    }
}
foreach ($askwpd_menu_items as $pos => $m) {
    if (isset($askwpd_have[$m[0]])) {
        continue;
    }
    $args = array(
        'menu-item-title' => $m[4], 'menu-item-type' => $m[1], 'menu-item-object' => $m[2],
        'menu-item-object-id' => $m[3], 'menu-item-status' => 'publish', 'menu-item-position' => $pos + 1,
        'menu-item-parent-id' => $m[5] !== '' ? $askwpd_have[$m[5]] : 0,
    );
    if ($m[1] === 'custom') {
        $args['menu-item-url'] = $m[6];
    }
    $r = wp_update_nav_menu_item($askwpd_menu_id, 0, $args);
    if (is_wp_error($r)) {
        askwpd_log('menu item: ' . $r->get_error_message());
        exit(1);
    }
    update_post_meta($r, '_askwpd_seed_menu', $m[0]);
    $askwpd_have[$m[0]] = (int) $r;
    $askwpd_changed++;
}
// Assign it where the theme has classic locations (twentytwentythree, a block theme, has none).
$askwpd_locs = get_registered_nav_menus();
if ($askwpd_locs) {
    $cur = get_nav_menu_locations();
    $first = array_key_first($askwpd_locs);
    if (($cur[$first] ?? 0) !== $askwpd_menu_id) {
        $cur[$first] = $askwpd_menu_id;
        set_theme_mod('nav_menu_locations', $cur);
        $askwpd_changed++;
    }
}

// Block themes render a wp_navigation post (the header's Navigation block falls back to the
// most recently published one): mirror the classic menu there with root-relative URLs.
$askwpd_nav_link = function ($label, $type, $id, $url, $kind) {
    return '<!-- wp:navigation-link ' . wp_json_encode(array('label' => $label, 'type' => $type, 'id' => $id, 'url' => $url, 'kind' => $kind, 'isTopLevelLink' => true), JSON_UNESCAPED_SLASHES) . ' /-->';
};
$askwpd_nav_content =
    '<!-- wp:navigation-submenu ' . wp_json_encode(array('label' => 'About', 'type' => 'page', 'id' => $askwpd_ids['about'], 'url' => '/about/', 'kind' => 'post-type'), JSON_UNESCAPED_SLASHES) . ' -->'
    . '<!-- wp:navigation-link ' . wp_json_encode(array('label' => 'Team', 'type' => 'page', 'id' => $askwpd_ids['team'], 'url' => '/about/team/', 'kind' => 'post-type'), JSON_UNESCAPED_SLASHES) . ' /-->'
    . '<!-- /wp:navigation-submenu -->'
    . $askwpd_nav_link('Coffee', 'category', $askwpd_cat_ids['coffee'], '/category/coffee/', 'taxonomy')
    . $askwpd_nav_link('Pricing & FAQ', 'page', $askwpd_ids['pricing-faq'], '/pricing-faq/', 'post-type')
    . $askwpd_nav_link('Contact', 'page', $askwpd_ids['contact'], '/contact/', 'post-type');
$askwpd_ids['main-navigation'] = askwpd_upsert(array(
    'key' => 'main-navigation', 'slug' => 'main-navigation', 'type' => 'wp_navigation', 'status' => 'publish',
    'title' => 'Main Navigation', 'content' => $askwpd_nav_content, 'author' => $askwpd_admin->ID,
    'date_gmt' => gmdate('Y-m-d H:i:s', $askwpd_now - 700 * 86400),
));

// Rewrite rules: flush when missing or when the structure changed (install.php empties them).
$askwpd_rules = get_option('rewrite_rules');
if (empty($askwpd_rules) || !isset($askwpd_rules['^wp-sitemap\.xml$'])) {
    askwpd_log('flushing rewrite rules');
    flush_rewrite_rules(false);
}

// Manifest for tests.
if ($askwpd_manifest !== '') {
    $items = array();
    $markers = array();
    foreach ($SECRETS as $s) {
        $markers[$s['key']] = $s;
    }
    foreach (array_merge($POSTS, $PAGES, $SECRETS) as $spec) {
        $id = $askwpd_ids[$spec['key']];
        $p = get_post($id);
        $public = askwpd_seed_public($p);
        $items[] = array(
            'key' => $spec['key'],
            'id' => $id,
            'type' => $p->post_type,
            'status' => $p->post_status,
            'public' => $public,
            'password' => $p->post_password !== '' ? $p->post_password : null,
            'marker' => $markers[$spec['key']]['marker'] ?? null,
            // Only in the body; WordPress itself shows titles of password-protected items.
            'body_marker' => isset($markers[$spec['key']]) ? $markers[$spec['key']]['marker'] . 'BODY' : null,
            'title' => $p->post_title,
            'slug' => $p->post_name,
            'parent' => (int) $p->post_parent,
            'date_gmt' => $p->post_date_gmt,
            'url' => ($p->post_status === 'publish' || $p->post_type === 'attachment') ? get_permalink($p) : home_url('/?p=' . $id),
            'categories' => $p->post_type === 'post' ? wp_get_post_categories($id, array('fields' => 'slugs')) : array(),
            'tags' => $p->post_type === 'post' ? wp_get_post_tags($id, array('fields' => 'slugs')) : array(),
        );
    }
    $terms = array();
    foreach (get_terms(array('taxonomy' => array('category', 'post_tag'), 'hide_empty' => false)) as $t) {
        $terms[] = array('taxonomy' => $t->taxonomy, 'id' => $t->term_id, 'slug' => $t->slug, 'name' => $t->name, 'count' => (int) $t->count, 'url' => get_term_link($t));
    }
    $menu = array();
    foreach ((array) wp_get_nav_menu_items($askwpd_menu_id) as $it) {
        $menu[] = array('id' => (int) $it->ID, 'title' => $it->title, 'url' => $it->url, 'parent' => (int) $it->menu_item_parent, 'object' => $it->object, 'object_id' => (int) $it->object_id);
    }
    $latest = get_posts(array('numberposts' => 1, 'post_type' => 'post', 'post_status' => 'publish', 'has_password' => false, 'orderby' => 'date', 'order' => 'DESC'));
    $doc = array(
        'site_url' => home_url(),
        'site_title' => get_option('blogname'),
        'tagline' => get_option('blogdescription'),
        'permalink_structure' => get_option('permalink_structure'),
        'latest_post_id' => $latest ? $latest[0]->ID : null,
        'navigation_post_id' => $askwpd_ids['main-navigation'],
        'menu' => array('id' => $askwpd_menu_id, 'name' => $askwpd_menu_name, 'items' => $menu),
        'items' => $items,
        'terms' => $terms,
    );
    $json = wp_json_encode($doc, JSON_PRETTY_PRINT | JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE) . "\n";
    if (!is_file($askwpd_manifest) || file_get_contents($askwpd_manifest) !== $json) {
        file_put_contents($askwpd_manifest . '.tmp', $json);
        rename($askwpd_manifest . '.tmp', $askwpd_manifest);
    }
}

// For wp-up.sh's check: the first seeded post's permalink and its title as the theme prints it.
$askwpd_first = get_post($askwpd_ids[$POSTS[0]['key']]);
echo 'VERIFY_URL=', get_permalink($askwpd_first), "\n";
echo 'VERIFY_TEXT=', esc_html(get_the_title($askwpd_first)), "\n";

askwpd_log($askwpd_changed ? "$askwpd_changed change(s)" : 'nothing to change');
