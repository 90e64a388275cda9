package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// queryMix is what a chatbot in front of the test site would send: 2–6
// distinctive words about the seeded posts and the generated ledger posts,
// some misspelt, some questions, some with filters or date sorting, some
// the site cannot answer.
type queryMix struct {
	seed, gen, miss, none []string
	adj, noun             []string
}

func newQueryMix() *queryMix {
	return &queryMix{
		seed: []string{"espresso grinder retention", "kitchen scale grinder", "roasting yirgacheffe popcorn popper",
			"sourdough starter hooch", "sluggish rise starter", "php-fpm pool unix user", "harden php-fpm",
			"gofmt tabs spaces", "mastodon vps migration", "cheaper vps mastodon", "caddy reverse proxy wordpress",
			"caddy json config", "mariadb backup restic", "nightly mariabackup", "token bucket rate limiter go",
			"worm farm coffee grounds", "bicycle commuter lighting", "slow wp_query meta query", "lantern search relaunch",
			"pricing frequently asked questions", "visiting hours contact", "workshops", "roasting and repair crew", "about workshop journal"},
		miss: []string{"expresso grindr retension", "sourdogh startr", "mariadb bakup", "cady reverse proxi", "tokn bucket limitter",
			"mastadon vps", "wormfarm cofee"},
		gen: []string{"ledger archive", "generated archive ledger", "copper kettle", "lighthouse keeper", "windmill restores", "granary harbor",
			"weathered wharf", "quiet orchard"},
		none: []string{"refund policy", "quantum chromodynamics lattice", "cryptocurrency staking rewards", "zzyzx qwfp"},
		adj: strings.Fields(`amber ancient autumn brass brisk bright calm careful cedar clever coastal copper crisp curious distant dusty
			early eastern faded gentle gilded granite hidden hollow humble iron ivory juniper lantern linen maple marble misty
			northern oaken olive pale quiet rapid rustic saffron silver slate smoky southern steady stone timber velvet warm wild willow`),
		noun: strings.Fields(`anchor archive attic badger barrel basket beacon bellows bicycle bridge brook cabinet canal candle canyon
			cellar chapel chimney clock compass cottage courtyard crane creek ferry fiddle forge fountain furnace garden gate glacier
			granary harbor hearth heron island journal kettle kiln ladder ledger lighthouse loom market meadow mill mirror orchard
			pantry pavilion pier quarry raft reservoir river saddle sextant shed stable staircase stove tannery telescope tower
			tunnel valley vineyard wagon warehouse weir wharf windmill workshop`),
	}
}

func (m *queryMix) next(r *rand.Rand) (map[string]any, string) {
	pick := func(xs []string) string { return xs[r.IntN(len(xs))] }
	args := map[string]any{}
	kind := ""
	switch x := r.IntN(100); {
	case x < 40:
		args["query"], kind = pick(m.seed), "seed"
	case x < 50:
		args["query"], kind = "how do I "+pick(m.seed)+"?", "question"
	case x < 58:
		args["query"], kind = pick(m.miss), "misspelt"
	case x < 78:
		args["query"], kind = pick(m.adj)+" "+pick(m.noun), "generated"
	case x < 86:
		args["query"], kind = pick(m.gen), "generated"
	case x < 90:
		args["query"], kind = fmt.Sprintf("ledger %05d", 1+r.IntN(1500)), "number"
	default:
		args["query"], kind = pick(m.none), "no_answer"
	}
	switch x := r.IntN(100); {
	case x < 10:
		args["filters"] = map[string]any{"type": "post"}
	case x < 15:
		args["sort"] = "date"
	case x < 20:
		args["passages"] = true
	}
	if r.IntN(3) == 0 {
		args["limit"] = 5 + r.IntN(6)
	}
	return args, kind
}

type searchStats struct {
	mu       sync.Mutex
	lat      []time.Duration // every search
	latNoExp []time.Duration // searches without live expansion
	errs     map[string]int
	expanded int
	byAction map[string]int
	interval []time.Duration // since the last soak sample
}

func newSearchStats() *searchStats {
	return &searchStats{errs: map[string]int{}, byAction: map[string]int{}}
}

// searchClient searches until ctx is done, pausing think (uniform 0..2×)
// between searches.
func searchClient(ctx context.Context, p *daemonProc, mix *queryMix, seed uint64, think time.Duration, st *searchStats) {
	r := rand.New(rand.NewPCG(seed, seed*7+1))
	if think > 0 {
		// Clients do not all start in the same millisecond.
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(r.Int64N(int64(2 * think)))):
		}
	}
	for ctx.Err() == nil {
		args, _ := mix.next(r)
		body, _ := json.Marshal(args)
		req, _ := http.NewRequest("POST", p.base+"/v1/tools/search_site", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+p.token)
		req.Header.Set("Content-Type", "application/json")
		t0 := time.Now()
		resp, err := p.client.Do(req)
		var (
			kind   string
			action string
			exp    bool
		)
		if err != nil {
			kind = "transport"
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				kind = "timeout"
			}
		} else {
			b, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			var sr struct {
				Action        string `json:"action"`
				ExpansionStop string `json:"expansion_stop"`
			}
			switch {
			case rerr != nil:
				kind = "read"
			case resp.StatusCode != 200:
				kind = "status_" + strconv.Itoa(resp.StatusCode)
			case json.Unmarshal(b, &sr) != nil:
				kind = "decode"
			}
			action, exp = sr.Action, sr.ExpansionStop != ""
		}
		d := time.Since(t0)
		st.mu.Lock()
		if kind != "" {
			st.errs[kind]++
		} else {
			st.lat = append(st.lat, d)
			st.interval = append(st.interval, d)
			st.byAction[action]++
			if exp {
				st.expanded++
			} else {
				st.latNoExp = append(st.latNoExp, d)
			}
		}
		st.mu.Unlock()
		if think > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Duration(r.Int64N(int64(2 * think)))):
			}
		}
	}
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
