package api

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// The cluster section shows who this node is, who leads, how far the
// node has applied the changelog and, on Galera, its node's state; a
// database that is not usable is said so, with the error escaped.
func TestAdmin_Cluster(t *testing.T) {
	get := func(cs *ClusterStatus, path string) string { return authGet(t, &fakeBackend{cluster: cs}, path) }
	exp := time.Date(2026, 5, 1, 10, 0, 4, 0, time.UTC)
	since := time.Date(2026, 5, 1, 10, 0, 1, 0, time.UTC)
	cs := &ClusterStatus{Node: "web2-ab12", Host: "web2 127.0.0.1:8787", Role: "follower", Leader: "web1-cd34", LeaderHost: "web1 127.0.0.1:8787",
		LeaseValid: true, LeaseExpiresAt: &exp, AppliedID: 40, NewestID: 42, Lag: 2, LagSeconds: 1.25,
		Database: ClusterDatabase{Usable: false, Error: "Error 1047 (08S01): WSREP has not yet prepared node <for> application use", Since: &since,
			Galera: &GaleraStatus{Node: "node2", State: "Joined", Status: "non-Primary", Size: 1, RecvQueue: 3}},
		ReadAt: exp}
	html := get(cs, "/admin")
	for _, want := range []string{`id="cluster" data-role="follower"`, `>web2-ab12</b>`, `id="cluster_role" data-value="follower">follower</b>`,
		`>web1-cd34</b>`, `>2026-05-01 10:00:04 UTC</b>`, `data-value="40" data-newest="42">40 / 42</b>`, `data-value="2">2 rows, 1.2 s</b>`,
		`id="cluster_database" data-usable="false">not usable</b>`, `data-state="Joined" data-status="non-Primary"`, `>node2: Joined, non-Primary, 1 nodes</b>`,
		`since 2026-05-01 10:00:01 UTC: Error 1047 (08S01): WSREP has not yet prepared node &lt;for&gt; application use.`,
		`the leader runs on web1 127.0.0.1:8787`} {
		if !strings.Contains(html, want) {
			t.Errorf("admin page lacks %s", want)
		}
	}
	var st struct {
		Cluster *ClusterStatus `json:"cluster"`
	}
	if err := json.Unmarshal([]byte(get(cs, "/v1/status")), &st); err != nil || st.Cluster == nil || st.Cluster.Database.Galera.State != "Joined" ||
		st.Cluster.LeaseExpiresAt == nil || !st.Cluster.LeaseExpiresAt.Equal(exp) {
		t.Errorf("/v1/status cluster = %+v, %v", st.Cluster, err)
	}
	single := *cs
	single.Role, single.Database = "leader", ClusterDatabase{Usable: true}
	html = get(&single, "/admin")
	if !strings.Contains(html, `id="cluster_database" data-usable="true">usable</b>`) || strings.Contains(html, "cluster_galera") ||
		strings.Contains(html, "cluster_database_error") {
		t.Errorf("admin page of a leader on a single MariaDB:\n%s", html)
	}
	if strings.Contains(get(nil, "/admin"), `id="cluster"`) {
		t.Error("a cluster section with cluster mode off")
	}
}
