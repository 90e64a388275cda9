<?php
/**
 * Writes the companion plugin's translation template, languages/askwpd-companion.pot,
 * from its gettext calls (__(), _e(), esc_html__(), _x(), _n() and the rest) and its
 * plugin header, the way `wp i18n make-pot` would, without WP-CLI.
 *
 * Usage: php scripts/make-pot.php [--check] [PLUGIN_DIR] [OUT]
 *   PLUGIN_DIR  default wp-plugin-shim/ (its tests/ are skipped)
 *   OUT         default PLUGIN_DIR/languages/askwpd-companion.pot; "-" prints it
 *   --check     writes nothing; exits 1 when OUT is not what this would write
 *
 * It exits 1, naming the place, for a gettext call whose text or text domain is not a
 * literal, or whose domain is not askwpd-companion: such a string could never be
 * translated. The POT-Creation-Date is kept when nothing else changed, so a rerun
 * leaves the file alone.
 */

const DOMAIN = 'askwpd-companion';

// Each function's arguments, in order: text, plural, context, domain, or '' to skip.
const KEYWORDS = array(
	'__'              => array( 'text', 'domain' ),
	'_e'              => array( 'text', 'domain' ),
	'esc_html__'      => array( 'text', 'domain' ),
	'esc_html_e'      => array( 'text', 'domain' ),
	'esc_attr__'      => array( 'text', 'domain' ),
	'esc_attr_e'      => array( 'text', 'domain' ),
	'_x'              => array( 'text', 'context', 'domain' ),
	'_ex'             => array( 'text', 'context', 'domain' ),
	'esc_html_x'      => array( 'text', 'context', 'domain' ),
	'esc_attr_x'      => array( 'text', 'context', 'domain' ),
	'_n'              => array( 'text', 'plural', '', 'domain' ),
	'_nx'             => array( 'text', 'plural', '', 'context', 'domain' ),
	'_n_noop'         => array( 'text', 'plural', 'domain' ),
	'_nx_noop'        => array( 'text', 'plural', 'context', 'domain' ),
);

$args  = array_slice( $argv, 1 );
$check = false;
if ( isset( $args[0] ) && '--check' === $args[0] ) {
	$check = true;
	array_shift( $args );
}
$root = rtrim( $args[0] ?? dirname( __DIR__ ) . '/wp-plugin-shim', '/' );
$out  = $args[1] ?? $root . '/languages/' . DOMAIN . '.pot';
if ( ! is_file( "$root/askwpd-companion.php" ) ) {
	fwrite( STDERR, "make-pot: $root/askwpd-companion.php not found\n" );
	exit( 2 );
}

$entries = array(); // key => msgctxt, msgid, plural, refs, comments
$errors  = array();

$add = static function ( array $e, string $ref, string $comment ) use ( &$entries ) {
	$key = ( $e['context'] ?? '' ) . "\x04" . $e['text'];
	if ( ! isset( $entries[ $key ] ) ) {
		$entries[ $key ] = array(
			'context'  => $e['context'] ?? null,
			'text'     => $e['text'],
			'plural'   => $e['plural'] ?? null,
			'refs'     => array(),
			'comments' => array(),
		);
	}
	$entries[ $key ]['refs'][] = $ref;
	if ( '' !== $comment && ! in_array( $comment, $entries[ $key ]['comments'], true ) ) {
		$entries[ $key ]['comments'][] = $comment;
	}
};

// The plugin header, as WordPress reads it for the Plugins screen.
$main    = file_get_contents( "$root/askwpd-companion.php" );
$headers = array();
foreach ( array( 'Plugin Name', 'Plugin URI', 'Description', 'Author', 'Version' ) as $h ) {
	if ( preg_match( '/^[ \t\/*#@]*' . preg_quote( $h, '/' ) . ':(.*)$/mi', $main, $m ) ) {
		$headers[ $h ] = trim( $m[1] );
	}
}
foreach ( array( 'Plugin Name', 'Plugin URI', 'Description', 'Author' ) as $h ) {
	if ( ! empty( $headers[ $h ] ) ) {
		$add( array( 'text' => $headers[ $h ] ), '', $h . ' of the plugin' );
	}
}

$files = new RecursiveIteratorIterator( new RecursiveDirectoryIterator( $root, FilesystemIterator::SKIP_DOTS ) );
$list  = array();
foreach ( $files as $f ) {
	$rel = substr( $f->getPathname(), strlen( $root ) + 1 );
	if ( 'php' === $f->getExtension() && 0 !== strpos( $rel, 'tests/' ) ) {
		$list[] = $rel;
	}
}
sort( $list );

/** The value of a string literal token, or null for anything else. */
function literal( array $toks ): ?string {
	$toks = array_values(
		array_filter(
			$toks,
			static function ( $t ) {
				return ! ( is_array( $t ) && in_array( $t[0], array( T_WHITESPACE, T_COMMENT, T_DOC_COMMENT ), true ) );
			}
		)
	);
	if ( 1 !== count( $toks ) || ! is_array( $toks[0] ) || T_CONSTANT_ENCAPSED_STRING !== $toks[0][0] ) {
		return null;
	}
	$s = $toks[0][1];
	$q = $s[0];
	$s = substr( $s, 1, -1 );
	if ( "'" === $q ) {
		return strtr( $s, array( '\\\\' => '\\', "\\'" => "'" ) );
	}
	return stripcslashes( str_replace( '\\$', '$', $s ) );
}

foreach ( $list as $rel ) {
	$toks    = token_get_all( file_get_contents( "$root/$rel" ) );
	$n       = count( $toks );
	$comment = '';
	$c_line  = -10;
	$prev    = null; // The previous significant token.
	for ( $i = 0; $i < $n; $i++ ) {
		$t = $toks[ $i ];
		if ( is_array( $t ) && T_WHITESPACE === $t[0] ) {
			continue;
		}
		if ( is_array( $t ) && in_array( $t[0], array( T_COMMENT, T_DOC_COMMENT ), true ) ) {
			if ( preg_match( '/translators:\s*(.*?)\s*(\*\/)?$/s', $t[1], $m ) ) {
				$comment = 'translators: ' . trim( preg_replace( '/\s*\n\s*\*?\s*/', ' ', $m[1] ) );
				$c_line  = $t[2] + substr_count( $t[1], "\n" );
			}
			continue;
		}
		$is_call = is_array( $t ) && T_STRING === $t[0] && isset( KEYWORDS[ $t[1] ] )
			&& ! ( is_array( $prev ) && in_array( $prev[0], array( T_OBJECT_OPERATOR, T_DOUBLE_COLON, T_FUNCTION, T_NEW ), true ) );
		$prev    = $t;
		if ( ! $is_call ) {
			continue;
		}
		$j = $i + 1;
		while ( $j < $n && is_array( $toks[ $j ] ) && T_WHITESPACE === $toks[ $j ][0] ) {
			$j++;
		}
		if ( '(' !== ( $toks[ $j ] ?? null ) ) {
			continue;
		}
		// The arguments at depth 1.
		$argv_t = array( array() );
		$depth  = 0;
		for ( $k = $j; $k < $n; $k++ ) {
			$x = $toks[ $k ];
			$c = is_array( $x ) ? $x[1] : $x;
			if ( in_array( $c, array( '(', '[', '{' ), true ) || ( is_array( $x ) && in_array( $x[0], array( T_CURLY_OPEN, T_DOLLAR_OPEN_CURLY_BRACES ), true ) ) ) {
				if ( $depth++ > 0 ) {
					$argv_t[ count( $argv_t ) - 1 ][] = $x;
				}
				continue;
			}
			if ( in_array( $c, array( ')', ']', '}' ), true ) ) {
				if ( --$depth === 0 ) {
					break;
				}
				$argv_t[ count( $argv_t ) - 1 ][] = $x;
				continue;
			}
			if ( ',' === $c && 1 === $depth ) {
				$argv_t[] = array();
				continue;
			}
			$argv_t[ count( $argv_t ) - 1 ][] = $x;
		}
		$line = $t[2];
		$ref  = "$rel:$line";
		$e    = array();
		foreach ( KEYWORDS[ $t[1] ] as $pos => $role ) {
			if ( '' === $role ) {
				continue;
			}
			$e[ $role ] = literal( $argv_t[ $pos ] ?? array() );
		}
		if ( null === $e['text'] || ( array_key_exists( 'plural', $e ) && null === $e['plural'] ) || ( array_key_exists( 'context', $e ) && null === $e['context'] ) ) {
			$errors[] = "$ref: {$t[1]}() needs literal strings";
			continue;
		}
		if ( DOMAIN !== $e['domain'] ) {
			$errors[] = "$ref: {$t[1]}() has text domain " . var_export( $e['domain'], true ) . ', not ' . DOMAIN;
			continue;
		}
		$add( $e, $ref, $line - $c_line <= 1 && $line >= $c_line ? $comment : '' );
		if ( $line - $c_line > 1 ) {
			$comment = '';
		}
	}
}

if ( $errors ) {
	fwrite( STDERR, 'make-pot: ' . implode( "\nmake-pot: ", $errors ) . "\n" );
	exit( 1 );
}

function po_str( string $s ): string {
	return '"' . strtr(
		$s,
		array(
			'\\' => '\\\\',
			'"'  => '\\"',
			"\n" => '\\n',
			"\t" => '\\t',
			"\r" => '\\r',
		)
	) . '"';
}

$body = '';
foreach ( $entries as $e ) {
	$body .= "\n";
	foreach ( $e['comments'] as $c ) {
		$body .= "#. $c\n";
	}
	$refs = array_filter( $e['refs'] );
	if ( $refs ) {
		$body .= '#: ' . implode( ' ', $refs ) . "\n";
	}
	if ( preg_match( '/%(\d+\$)?[-+ 0\'.\d]*[bcdeEfFgGosuxX]/', $e['text'] . ( $e['plural'] ?? '' ) ) ) {
		$body .= "#, php-format\n";
	}
	if ( null !== $e['context'] ) {
		$body .= 'msgctxt ' . po_str( $e['context'] ) . "\n";
	}
	$body .= 'msgid ' . po_str( $e['text'] ) . "\n";
	if ( null !== $e['plural'] ) {
		$body .= 'msgid_plural ' . po_str( $e['plural'] ) . "\nmsgstr[0] \"\"\nmsgstr[1] \"\"\n";
	} else {
		$body .= "msgstr \"\"\n";
	}
}

$header = static function ( string $date ) use ( $headers ): string {
	return "# Copyright (C) askwpd\n"
		. "# This file is distributed under the GPL-2.0-or-later.\n"
		. "msgid \"\"\n"
		. "msgstr \"\"\n"
		. '"Project-Id-Version: ' . ( $headers['Plugin Name'] ?? DOMAIN ) . ' ' . ( $headers['Version'] ?? '' ) . "\\n\"\n"
		. "\"Report-Msgid-Bugs-To: https://github.com/askwp/askwpd/issues\\n\"\n"
		. "\"MIME-Version: 1.0\\n\"\n"
		. "\"Content-Type: text/plain; charset=UTF-8\\n\"\n"
		. "\"Content-Transfer-Encoding: 8bit\\n\"\n"
		. "\"POT-Creation-Date: $date\\n\"\n"
		. "\"PO-Revision-Date: YEAR-MO-DA HO:MI+ZONE\\n\"\n"
		. "\"Last-Translator: FULL NAME <EMAIL@ADDRESS>\\n\"\n"
		. "\"Language-Team: LANGUAGE <LL@li.org>\\n\"\n"
		. "\"X-Domain: " . DOMAIN . "\\n\"\n";
};

$old      = '-' !== $out && is_file( $out ) ? (string) file_get_contents( $out ) : '';
$old_date = preg_match( '/^"POT-Creation-Date: ([^"\\\\]*)\\\\n"$/m', $old, $m ) ? $m[1] : '';
$pot      = $header( $old_date ) . $body;
if ( '' === $old_date || $pot !== $old ) {
	$epoch = getenv( 'SOURCE_DATE_EPOCH' );
	$pot   = $header( gmdate( 'Y-m-d H:i+0000', false !== $epoch && '' !== $epoch ? (int) $epoch : time() ) ) . $body;
}

$count = count( $entries );
if ( $check ) {
	if ( $header( $old_date ) . $body !== $old ) {
		fwrite( STDERR, "make-pot: $out is out of date: run php scripts/make-pot.php\n" );
		exit( 1 );
	}
	fwrite( STDERR, "make-pot: $out is current ($count strings)\n" );
	exit( 0 );
}
if ( '-' === $out ) {
	echo $pot;
	exit( 0 );
}
if ( $pot !== $old ) {
	if ( ! is_dir( dirname( $out ) ) ) {
		mkdir( dirname( $out ), 0755, true );
	}
	file_put_contents( $out, $pot );
}
fwrite( STDERR, "make-pot: $out: $count strings\n" );
