package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/askwp/askwpd/internal/wptest"
)

// lockSite takes the test site lock (wptest's), and says how long it
// waited for it and held it.
func lockSite(ctx context.Context, site *wptest.Site) (func(), error) {
	t0 := time.Now()
	release, err := site.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	got := time.Now()
	fmt.Printf("site lock taken after waiting %.1fs\n", got.Sub(t0).Seconds())
	return func() {
		release()
		fmt.Printf("site lock held for %.1fs\n", time.Since(got).Seconds())
	}, nil
}

func genPosts(e map[string]string, args ...string) error {
	cmd := exec.Command("php", append([]string{"-d", "display_errors=stderr", "-d", "memory_limit=1024M",
		filepath.Join(wptest.RepoRoot(), "scripts", "wp", "gen-posts.php"), "--url=" + e["SITE_URL"]}, args...)...)
	cmd.Env = append(os.Environ(), "WP_ROOT="+e["WP_ROOT"], "SITE_URL="+e["SITE_URL"])
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	// Its own process group: a Ctrl-C meant for the bench must not kill
	// the removal of the posts.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd.Run()
}

// loadCorpus runs scripts/wp/load-corpus.php, in its own process group
// like genPosts.
func loadCorpus(e map[string]string, args ...string) error {
	cmd := exec.Command("php", append([]string{"-d", "display_errors=stderr", "-d", "memory_limit=1024M",
		filepath.Join(wptest.RepoRoot(), "scripts", "wp", "load-corpus.php"), "--url=" + e["SITE_URL"]}, args...)...)
	cmd.Env = append(os.Environ(), "WP_ROOT="+e["WP_ROOT"], "SITE_URL="+e["SITE_URL"])
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd.Run()
}

type hotPost struct {
	ID  int64  `json:"id"`
	URL string `json:"url"`
}

// hotPosts asks WordPress for n public posts and pages, generated ones
// included when there are any, with their permalinks.
func hotPosts(e map[string]string, n int) ([]hotPost, error) {
	u := strings.TrimPrefix(strings.TrimPrefix(e["SITE_URL"], "http://"), "https://")
	host, _, _ := strings.Cut(u, ":")
	code := fmt.Sprintf(`$gen = get_posts(array('post_type' => 'post', 'post_status' => 'publish', 'numberposts' => %[1]d, 'fields' => 'ids', 'meta_key' => '_askwpd_generated', 'orderby' => 'ID', 'order' => 'ASC'));
		$seed = get_posts(array('post_type' => array('post', 'page'), 'post_status' => 'publish', 'numberposts' => %[1]d, 'fields' => 'ids', 'has_password' => false, 'orderby' => 'ID', 'order' => 'ASC'));
		$ids = array_slice(array_values(array_unique(array_merge(array_slice($seed, 0, (int) ceil(%[1]d * 0.7)), $gen, $seed))), 0, %[1]d);
		$out = array(); foreach ($ids as $id) { $out[] = array('id' => $id, 'url' => get_permalink($id)); }
		echo json_encode($out);`, n)
	script := `$_SERVER['HTTP_HOST'] = '` + host + `'; $_SERVER['REQUEST_URI'] = '/'; define('WP_USE_THEMES', false); require '` +
		strings.TrimRight(e["WP_ROOT"], "/") + `/wp-load.php'; ` + code
	out, err := exec.Command("php", "-r", script).Output()
	if err != nil {
		return nil, fmt.Errorf("php: %w", err)
	}
	i := bytes.IndexByte(out, '[')
	if i < 0 {
		return nil, fmt.Errorf("php: %.200s", out)
	}
	var hp []hotPost
	if err := json.Unmarshal(out[i:], &hp); err != nil {
		return nil, fmt.Errorf("php: %w: %.200s", err, out)
	}
	if len(hp) == 0 {
		return nil, errors.New("the site has no public posts")
	}
	return hp, nil
}
