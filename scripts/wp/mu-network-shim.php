<?php
/**
 * askwpd network tests: points the network-activated shim at the daemon a test runs,
 * from a JSON file the test writes (ASKWPD_URL, ASKWPD_TOKEN, ASKWPD_WEBHOOK_SECRET)
 * and removes. Installed by scripts/network-up.sh; without the file it does nothing.
 */
$askwpd_net_cfg = json_decode((string) @file_get_contents('@CONFIG_FILE@'), true);
if (is_array($askwpd_net_cfg)) {
	foreach (array('ASKWPD_URL', 'ASKWPD_TOKEN', 'ASKWPD_WEBHOOK_SECRET') as $askwpd_k) {
		if (isset($askwpd_net_cfg[$askwpd_k]) && !defined($askwpd_k)) {
			define($askwpd_k, $askwpd_net_cfg[$askwpd_k]);
		}
	}
}
unset($askwpd_net_cfg, $askwpd_k);
