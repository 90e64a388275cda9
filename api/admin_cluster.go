package api

import "time"

// ClusterStatus is a cluster node's part in /v1/status and the admin
// page: who it is, who leads, how far it has applied the changelog, and
// whether its database (on Galera, its node) is usable.
type ClusterStatus struct {
	Node string `json:"node"`
	Host string `json:"host"`
	// Role is "leader" or "follower".
	Role string `json:"role"`
	// Leader is the lease's holder ("" when none holds it), LeaderHost
	// where it runs; LeaseExpiresAt is when its lease runs out, by the
	// database's clock, unless renewed.
	Leader         string     `json:"leader"`
	LeaderHost     string     `json:"leader_host,omitempty"`
	LeaseValid     bool       `json:"lease_valid"`
	LeaseExpiresAt *time.Time `json:"lease_expires_at,omitempty"`
	// AppliedID is the last changelog id applied to this node's store,
	// NewestID the changelog's newest; Lag is the rows between, and
	// LagSeconds how long ago the oldest of them was written.
	AppliedID  int64           `json:"changelog_applied_id"`
	NewestID   int64           `json:"changelog_newest_id"`
	Lag        int64           `json:"lag_rows"`
	LagSeconds float64         `json:"lag_seconds"`
	Database   ClusterDatabase `json:"database"`
	// ReadAt is when the lease and the database's state were last read.
	ReadAt time.Time `json:"read_at"`
}

// ClusterDatabase is the state of a cluster node's database. While it is
// not usable the node serves searches from its index and does not lead.
type ClusterDatabase struct {
	Usable bool       `json:"usable"`
	Error  string     `json:"error,omitempty"`
	Since  *time.Time `json:"since,omitempty"`
	// Galera is the node's Galera state; nil on a server that is not a
	// Galera node.
	Galera *GaleraStatus `json:"galera,omitempty"`
}

// GaleraStatus is a Galera node's wsrep_ status.
type GaleraStatus struct {
	Node string `json:"node"`
	// State is wsrep_local_state_comment: Synced, Donor/Desynced,
	// Joining, Joined; Status wsrep_cluster_status: Primary, non-Primary.
	State  string `json:"state"`
	Status string `json:"cluster_status"`
	Size   int    `json:"cluster_size"`
	Ready  bool   `json:"ready"`
	// RecvQueue is writesets received and not yet applied: the node's
	// lag behind the cluster.
	RecvQueue     int64 `json:"recv_queue"`
	LastCommitted int64 `json:"last_committed"`
}
