# ---- worker (cmd/sudoku-fcgi, fcgi/) targets: owned by the worker helper ----
.PHONY: worker-test worker-fuzz worker-bench worker-bench-nginx

worker-test: ## worker: vet + race tests of fcgi/ and cmd/sudoku-fcgi
	$(or $(GO),go) vet ./fcgi/... ./cmd/sudoku-fcgi/...
	$(or $(GO),go) test -race -shuffle=on ./fcgi/... ./cmd/sudoku-fcgi/...

worker-fuzz: ## worker: fuzz the handler, query parsing and JSON escaping (FUZZTIME=30s each)
	$(or $(GO),go) test ./fcgi -run '^$$' -fuzz '^FuzzHandler$$' -fuzztime $(or $(FUZZTIME),30s)
	$(or $(GO),go) test ./fcgi -run '^$$' -fuzz '^FuzzParseQuery$$' -fuzztime $(or $(FUZZTIME),30s)
	$(or $(GO),go) test ./fcgi -run '^$$' -fuzz '^FuzzAppendJSONString$$' -fuzztime $(or $(FUZZTIME),30s)

worker-bench: ## worker: handler and FastCGI round-trip benchmarks (CPU, allocs per request)
	$(or $(GO),go) test ./fcgi -run '^$$' -bench . -benchmem -count $(or $(COUNT),5)

worker-bench-nginx: ## worker: host nginx -> fcgi vs plain net/http with wrk (ports 19000-19099)
	tests/bench/worker-fcgi.sh
# ---- end of worker targets ----
