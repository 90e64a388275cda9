package daemon

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/cluster"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/wp"
)

// clusterState is cluster mode's part of a Daemon: nil when it is off.
type clusterState struct {
	node *cluster.Node
	db   *sql.DB
}

// openCluster creates the cluster's tables in the WordPress database and
// the node that takes part in it. Cluster mode needs the database, and
// covers a single site: a network's sites are not shared yet.
func (d *Daemon) openCluster(ctx context.Context, dsn, prefix string) error {
	cfg := d.Config.Cluster
	if !cfg.On() {
		return nil
	}
	if d.WP == nil || dsn == "" {
		return errors.New(`config: cluster.mode = "mariadb" needs the WordPress database (wp_root with a readable wp-config.php, or db_dsn)`)
	}
	if d.wpNet != nil {
		return errors.New(`config: cluster.mode = "mariadb" does not support multisite networks yet; run one daemon per network`)
	}
	db, err := wp.OpenWriter(ctx, dsn)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	c, err := cluster.Open(ctx, db, prefix, cfg.Name)
	if err != nil {
		db.Close()
		return err
	}
	host, _ := os.Hostname()
	node := &cluster.Node{C: c, Store: d.Store, Crawler: d.Crawler, Log: d.Log.With("component", "cluster"),
		ID: host + "-" + randomHex(6), Host: host + " " + d.Config.Listen, TTL: cfg.LeaseTTL.Duration, Poll: cfg.Poll.Duration,
		Pass: d.runPass}
	d.cluster = &clusterState{node: node, db: db}
	d.obs().reg.MustRegister(&clusterCollector{d: d})
	galera := "no"
	if c.IsGalera() {
		galera = "yes: causal reads (wsrep_sync_wait) on the statements that decide"
	}
	d.Log.Info("Cluster mode", "tables", c.Tables(), "node", node.ID, "galera", galera)
	return nil
}

// clusterStatus is the node's part in /v1/status and /admin, as the node
// last read it (it waits on no statement); nil when cluster mode is off.
func (d *Daemon) clusterStatus() *api.ClusterStatus {
	if d.cluster == nil {
		return nil
	}
	return apiClusterStatus(d.cluster.node.Status())
}

// ClusterCheck reads the cluster's state once, for askwpd doctor: the
// lease, this store's place in the changelog, and the database's (on
// Galera, its node's) state. nil when cluster mode is off.
func (d *Daemon) ClusterCheck(ctx context.Context) *api.ClusterStatus {
	if d.cluster == nil {
		return nil
	}
	return apiClusterStatus(d.cluster.node.Check(ctx))
}

func apiClusterStatus(s cluster.Status) *api.ClusterStatus {
	st := &api.ClusterStatus{Node: s.Node, Host: s.Host, Role: s.Role, Leader: s.Leader.Holder, LeaderHost: s.Leader.Host,
		LeaseValid: s.Leader.Valid, AppliedID: s.AppliedID, NewestID: s.Leader.Seq, Lag: s.Lag, LagSeconds: s.LagSeconds,
		Database: api.ClusterDatabase{Usable: s.DatabaseOK, Error: s.DatabaseError}, ReadAt: s.ReadAt}
	if !s.Leader.Expires.IsZero() && s.Leader.Holder != "" {
		t := s.Leader.Expires
		st.LeaseExpiresAt = &t
	}
	if !s.DatabaseSince.IsZero() {
		t := s.DatabaseSince
		st.Database.Since = &t
	}
	if g := s.Galera; g.On {
		st.Database.Galera = &api.GaleraStatus{Node: g.Node, State: g.State, Status: g.Status, Size: g.Size, Ready: g.Ready,
			RecvQueue: g.RecvQueue, LastCommitted: g.LastCommitted}
	}
	return st
}

// serveCluster runs the node until ctx is done; the returned func waits
// for it to give the lease up.
func (d *Daemon) serveCluster(ctx context.Context) (wait func()) {
	if d.cluster == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := d.cluster.node.Run(ctx); err != nil {
			d.Log.Error("Cluster node stopped", "error", err)
		}
	}()
	return func() { <-done }
}

// follower reports whether this daemon is a cluster node that does not
// lead: it neither crawls nor applies events, only the changelog.
func (d *Daemon) follower() bool { return d.cluster != nil && !d.cluster.node.Leader() }

func (d *Daemon) closeCluster() error {
	if d.cluster == nil {
		return nil
	}
	return d.cluster.db.Close()
}

// clusterCollector reads the node's counters at scrape time.
type clusterCollector struct{ d *Daemon }

var (
	descClLeader   = prometheus.NewDesc("askwpd_cluster_leader", "1 while this node holds the cluster lease.", nil, nil)
	descClApplied  = prometheus.NewDesc("askwpd_cluster_changelog_applied_id", "The last changelog id applied to this node's store.", nil, nil)
	descClQueries  = prometheus.NewDesc("askwpd_cluster_queries_total", "Statements this node sent to the WordPress database for cluster mode.", nil, nil)
	descClRows     = prometheus.NewDesc("askwpd_cluster_changelog_rows_total", "Changelog rows by what this node did with them.", []string{"op"}, nil)
	descClLeads    = prometheus.NewDesc("askwpd_cluster_leaderships_total", "Times this node took the lease.", nil, nil)
	descClEvents   = prometheus.NewDesc("askwpd_cluster_events_done_total", "Cluster events this node finished as leader.", nil, nil)
	descClPages    = prometheus.NewDesc("askwpd_cluster_pages", "Live pages in the changelog, as this node knows it.", nil, nil)
	descClRequests = prometheus.NewDesc("askwpd_site_requests_total", "Requests this daemon's crawler sent to the site.", nil, nil)
	descClDBUsable = prometheus.NewDesc("askwpd_cluster_database_usable", "1 while this node's database (on Galera, its node) is usable; 0 while the node serves from its index alone.", nil, nil)
	descClLag      = prometheus.NewDesc("askwpd_cluster_changelog_lag_rows", "Changelog rows this node had not applied when it last read the lease.", nil, nil)
	descClLagSecs  = prometheus.NewDesc("askwpd_cluster_changelog_lag_seconds", "How long ago the oldest changelog row this node had not applied was written.", nil, nil)
	descClGalera   = prometheus.NewDesc("askwpd_cluster_galera_recv_queue", "Writesets this node's Galera node had received and not applied (absent off Galera).", nil, nil)
)

func (c *clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descClLeader, descClApplied, descClQueries, descClRows, descClLeads, descClEvents, descClPages, descClRequests,
		descClDBUsable, descClLag, descClLagSecs, descClGalera} {
		ch <- d
	}
}

func (c *clusterCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.d.cluster.node.Stats()
	m := func(desc *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, t, v, labels...)
	}
	leader := 0.0
	if s.Leader {
		leader = 1
	}
	m(descClLeader, prometheus.GaugeValue, leader)
	m(descClApplied, prometheus.GaugeValue, float64(s.AppliedID))
	m(descClQueries, prometheus.CounterValue, float64(s.Queries))
	m(descClRows, prometheus.CounterValue, float64(s.Published), "published")
	m(descClRows, prometheus.CounterValue, float64(s.AppliedRows), "applied")
	m(descClLeads, prometheus.CounterValue, float64(s.Leaderships))
	m(descClEvents, prometheus.CounterValue, float64(s.EventsDone))
	m(descClPages, prometheus.GaugeValue, float64(s.Pages))
	m(descClRequests, prometheus.CounterValue, float64(c.d.Crawler.Fetcher.Requests()))
	st := c.d.cluster.node.Status()
	usable := 0.0
	if st.DatabaseOK {
		usable = 1
	}
	m(descClDBUsable, prometheus.GaugeValue, usable)
	m(descClLag, prometheus.GaugeValue, float64(st.Lag))
	m(descClLagSecs, prometheus.GaugeValue, st.LagSeconds)
	if st.Galera.On {
		m(descClGalera, prometheus.GaugeValue, float64(st.Galera.RecvQueue))
	}
}

// passAllowed reports whether this daemon may run a pass of its site:
// in a cluster, only the leader crawls.
func (d *Daemon) passAllowed(opt crawl.IndexOptions) bool {
	if d.follower() {
		d.Log.Debug("Index pass left to the cluster leader", "kind", opt.Kind)
		return false
	}
	return true
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
