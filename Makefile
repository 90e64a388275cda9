# askwpd's make targets. `make soak` is the long run whose numbers go in
# the closing note: every fuzz target for FUZZTIME, the 60 s load run,
# then the SOAK-long soak. Each step prints its own numbers.
#
#   make test                 # scripts/test.sh (CI)
#   make demo                 # scripts/demo.sh
#   make fuzz FUZZTIME=1m     # every Fuzz* target, one after the other
#   make load                 # bench/load: 200 clients 60 s, crawl, 10k events
#   make soak-run SOAK=30m    # the soak alone
#   make soak                 # fuzz, load, soak-run
GO ?= go
FUZZTIME ?= 5m
SOAK ?= 30m
LOAD_FLAGS ?=
SOAK_FLAGS ?=

.PHONY: test demo fuzz load soak-run soak

test:
	bash scripts/test.sh

demo:
	bash scripts/demo.sh

# Fuzz targets are found in the sources, so a new one is fuzzed without
# editing this file. go test fuzzes one target per invocation.
fuzz:
	@n=0; failed=""; log=$$(mktemp); trap 'rm -f "$$log"' EXIT; \
	for f in $$(grep -rlE --include='*_test.go' '^func Fuzz' . | grep -vE '^\./\.(wp-test|state|git)/' | sort); do \
	  dir=$$(dirname "$$f"); \
	  for name in $$(grep -oE '^func Fuzz[A-Za-z0-9_]+' "$$f" | sed 's/^func //'); do \
	    echo "==> fuzz $$dir $$name for $(FUZZTIME)"; \
	    n=$$((n+1)); \
	    if ! $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) "$$dir" >"$$log" 2>&1; then \
	      cat "$$log"; echo "==> FAIL: $$dir $$name"; failed="$$failed $$dir:$$name"; continue; \
	    fi; \
	    grep -E '^fuzz: elapsed' "$$log" | tail -n 1; grep -E '^(ok|PASS)' "$$log" | tail -n 1; \
	  done; \
	done; \
	if [ -n "$$failed" ]; then echo "==> fuzzed $$n targets for $(FUZZTIME) each; FAILED:$$failed"; exit 1; fi; \
	echo "==> fuzzed $$n targets for $(FUZZTIME) each, no failure"

load:
	$(GO) run ./bench/load $(LOAD_FLAGS)

soak-run:
	$(GO) run ./bench/load -soak $(SOAK) $(SOAK_FLAGS)

# Every step runs even when an earlier one fails; the target fails if any did.
soak:
	@rc=0; \
	$(MAKE) --no-print-directory fuzz || rc=1; \
	$(MAKE) --no-print-directory load || rc=1; \
	$(MAKE) --no-print-directory soak-run || rc=1; \
	exit $$rc
