package cluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// On Galera every node takes writes, and what a node reads is its own
// copy: a commit on another node reaches it a moment later, and a row
// lock (SELECT … FOR UPDATE) holds on its own node only. This package
// therefore relies on two things Galera does give, on every node:
//
//   - Writes are certified in one total order. A conditional UPDATE of
//     the lease row changes it on at most one node, and a transaction
//     that changed the lease row loses (1213, nothing written) to one
//     that changed it first and that it had not seen. So every statement
//     that decides on the lease writes the lease row.
//   - A read with wsrep_sync_wait waits until the node has applied every
//     commit the cluster had made when the read began. The reads that
//     decide (the lease, the changelog's tail, the events still to do)
//     ask for it, statement by statement (SET STATEMENT … FOR), so that
//     the pool's connections need no session state and a single MariaDB
//     is sent exactly what it was before.

// Galera is a Galera node's state, from its wsrep_ status variables.
type Galera struct {
	// On is whether the server is a Galera node (wsrep_on, a provider).
	On bool
	// Node is the node's name (wsrep_node_name).
	Node string
	// State is wsrep_local_state_comment: Synced, Donor/Desynced,
	// Joining, Joined, Initialized.
	State string
	// Status is wsrep_cluster_status: Primary, non-Primary, Disconnected.
	Status string
	// Size is how many nodes the node's component has.
	Size  int
	Ready bool
	// RecvQueue is how many writesets the node has received and not yet
	// applied (wsrep_local_recv_queue): its lag behind the cluster.
	RecvQueue int64
	// LastCommitted is the last writeset the node committed.
	LastCommitted int64
}

// Usable reports whether the node takes reads and writes: it is in the
// primary component and ready. A server that is not a Galera node is.
func (g Galera) Usable() bool { return !g.On || g.Ready && g.Status == "Primary" }

// String is the node's state for a status line.
func (g Galera) String() string {
	if !g.On {
		return "not a Galera node"
	}
	return fmt.Sprintf("Galera node %s: %s, %s, %d nodes, %d writesets to apply", g.Node, g.State, g.Status, g.Size, g.RecvQueue)
}

// Galera reads the server's wsrep_ variables and status. SHOW is answered
// by a node outside the primary component too, so this says why it is
// not usable where other statements only fail.
func (c *Cluster) Galera(ctx context.Context) (Galera, error) {
	// The variables are read once: a server does not become a Galera
	// node, or stop being one, without a restart, which Open sees.
	g := Galera{On: c.galera.Load(), Node: c.galeraNode}
	if !c.galeraRead {
		vars, err := c.show(ctx, "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('wsrep_on', 'wsrep_provider', 'wsrep_node_name')")
		if err != nil {
			return Galera{}, fmt.Errorf("cluster: read wsrep variables: %w", err)
		}
		g = Galera{On: strings.EqualFold(vars["wsrep_on"], "ON") && vars["wsrep_provider"] != "" && vars["wsrep_provider"] != "none",
			Node: vars["wsrep_node_name"]}
		c.galera.Store(g.On)
		c.galeraNode, c.galeraRead = g.Node, true
	}
	if !g.On {
		return g, nil
	}
	st, err := c.show(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_local_state_comment', 'wsrep_cluster_status',"+
		" 'wsrep_cluster_size', 'wsrep_ready', 'wsrep_local_recv_queue', 'wsrep_last_committed')")
	if err != nil {
		return g, fmt.Errorf("cluster: read wsrep status: %w", err)
	}
	g.State, g.Status = st["wsrep_local_state_comment"], st["wsrep_cluster_status"]
	g.Size, _ = strconv.Atoi(st["wsrep_cluster_size"])
	g.Ready = strings.EqualFold(st["wsrep_ready"], "ON")
	g.RecvQueue, _ = strconv.ParseInt(st["wsrep_local_recv_queue"], 10, 64)
	g.LastCommitted, _ = strconv.ParseInt(st["wsrep_last_committed"], 10, 64)
	return g, nil
}

// show runs a SHOW … WHERE and returns its name/value pairs.
func (c *Cluster) show(ctx context.Context, q string) (map[string]string, error) {
	c.queries.Add(1)
	rows, err := c.db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	m := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		m[strings.ToLower(k)] = v
	}
	return m, rows.Err()
}

// IsGalera reports whether the database was a Galera node when last read.
func (c *Cluster) IsGalera() bool { return c.galera.Load() }

// causal prefixes a read that decides with a causality wait on Galera:
// the node first applies every commit the cluster had made.
func (c *Cluster) causal(q string) string {
	if c.galera.Load() {
		return "SET STATEMENT wsrep_sync_wait = 1 FOR " + q
	}
	return q
}

// causalWrite is causal for an UPDATE or DELETE, which then decides on
// rows as the cluster has them rather than fail certification later.
func (c *Cluster) causalWrite(q string) string {
	if c.galera.Load() {
		return "SET STATEMENT wsrep_sync_wait = 3 FOR " + q
	}
	return q
}
