<?php
/**
 * The origin proof and its Site Health test.
 */

test('origin proof: HMAC-SHA256 of the nonce, the vector origin/origin_test.go checks', function () {
    eq(Askwpd_Origin::proof('00112233445566778899aabbccddeeff', 's3cret'), '95d1860497cd61cf0b1acc0b4a5ec866a5295100ea812883ec4e014b635908fd', 'proof');
    foreach (array('', 'short', 'ZZ112233445566778899aabbccddeeff', str_repeat('a', 65), "00112233445566778899aabbccddeeff\n") as $bad) {
        eq(Askwpd_Origin::proof($bad, 's3cret'), '', 'refused nonce ' . json_encode($bad));
    }
    eq(Askwpd_Origin::proof('00112233445566778899aabbccddeeff', ''), '', 'no secret, no proof');
});

test('origin Site Health: proven is good, a warning or no report is recommended', function () {
    $r = Askwpd_Origin::test_origin(array('origin' => array('address' => '127.0.0.1:8080', 'proven' => true, 'source' => 'discovered')));
    eq(array($r['status'], $r['test']), array('good', 'askwpd_origin'), 'proven');
    ok(false !== strpos($r['description'], '127.0.0.1:8080'), 'names the address');
    $r = Askwpd_Origin::test_origin(array('origin' => array('address' => '', 'proven' => false, 'warning' => 'no local web server <b>proved</b> it')));
    eq($r['status'], 'recommended', 'public address');
    ok(false !== strpos($r['description'], '&lt;b&gt;proved'), 'the warning is escaped');
    ok(false !== strpos($r['description'], 'origin = '), 'says what to set');
    eq(Askwpd_Origin::test_origin(array('version' => 'x'))['status'], 'recommended', 'an older daemon that reports no origin');
    $tests = Askwpd_Origin::tests(array('direct' => array(), 'async' => array()));
    ok(isset($tests['direct']['askwpd_origin']), 'registered');
});
