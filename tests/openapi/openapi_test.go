// Package openapi checks real answers of a running stack against the API
// description nginx serves (nginx/www/openapi.yaml): every status a client can
// provoke, both answer formats and the batch POST. The integration suite
// (tests/integration/run.sh) runs the e2e half (go test -tags e2e) against
// its stack with SUDOKU_API_URL, and the answers only an overloaded stack
// gives (503) from the files it records, with SUDOKU_API_RECORDED;
// against host processes, where nginx exempts loopback clients from its rate
// limits, set SUDOKU_API_TRUSTED=1 as well.
package openapi

import (
	"context"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// spec loads and validates the description, with its server replaced by
// base so that the router matches the stack's URLs.
func spec(t *testing.T, base string) routers.Router {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromFile("../../nginx/www/openapi.yaml")
	if err != nil {
		t.Fatalf("loading nginx/www/openapi.yaml: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("nginx/www/openapi.yaml is not a valid OpenAPI 3 document: %v", err)
	}
	doc.Servers = openapi3.Servers{{URL: base}}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatalf("routing nginx/www/openapi.yaml: %v", err)
	}
	return router
}

// TestDescriptionIsValid needs no stack: the document parses and validates.
func TestDescriptionIsValid(t *testing.T) {
	spec(t, "http://localhost:8080")
}
