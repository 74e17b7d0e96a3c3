package solver

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"
)

// engines are the engines this test binary can run: the scalar one
// always, the assembly one where it is built and the CPU runs it.
func engines() []bool {
	if asmEngine {
		return []bool{false, true}
	}
	return []bool{false}
}

func engineLabel(asm bool) string {
	if asm {
		return "assembly"
	}
	return "scalar"
}

// outcome is what a search finds and how many guesses it takes.
type outcome struct {
	count   int
	sol     Grid
	guesses int
}

func runEngine(g Grid, limit int, asm bool) outcome {
	sr := search{limit: limit, asm: asm}
	sr.start(g)
	o := outcome{count: sr.count, guesses: sr.guesses}
	if sr.count > 0 {
		o.sol = sr.sol
	}
	return o
}

// checkEnginesAgree fails unless both engines find the same solution, the
// same count and take the same guesses at limits 1 and 2.
func checkEnginesAgree(t *testing.T, line string, g Grid) {
	t.Helper()
	for _, limit := range []int{1, 2} {
		s, v := runEngine(g, limit, false), runEngine(g, limit, true)
		if s != v {
			t.Fatalf("%s at limit %d: scalar engine found %d solutions in %d guesses (%v), assembly engine %d in %d (%v)",
				line, limit, s.count, s.guesses, s.sol, v.count, v.guesses, v.sol)
		}
	}
}

func TestEngine(t *testing.T) {
	want := "scalar"
	if asmEngine {
		want = "asm-avx2"
	}
	if got := Engine(); got != want {
		t.Errorf("Engine() = %q, want %q", got, want)
	}
}

// TestEnginesAgree runs both engines on every puzzle of testdata and of
// every set.
func TestEnginesAgree(t *testing.T) {
	if !asmEngine {
		t.Skip("assembly engine not built (amd64 without the purego tag) or not run by this CPU (BMI1, BMI2, AVX2)")
	}
	files := []string{filepath.Join("testdata", "unique.txt"), filepath.Join("testdata", "multiple.txt"),
		filepath.Join("testdata", "nosolution.txt")}
	for _, f := range sets {
		files = append(files, filepath.Join("testdata", "sets", f.name))
	}
	for _, f := range files {
		puzzles := readPuzzles(t, f)
		stride := 1
		if raceEnabled && len(puzzles) > 500 {
			stride = len(puzzles) / 500
		}
		for i := 0; i < len(puzzles); i += stride {
			checkEnginesAgree(t, puzzles[i].line, puzzles[i].grid)
		}
	}
}

// FuzzEngines is the differential fuzz target: on any puzzle, both engines
// agree (checkEnginesAgree).
func FuzzEngines(f *testing.F) {
	if !asmEngine {
		f.Skip("assembly engine not built (amd64 without the purego tag) or not run by this CPU (BMI1, BMI2, AVX2)")
	}
	// A puzzle with few givens can search long: skip those the scalar
	// engine does not finish in 2 s.
	fuzzPuzzles(f, 2*time.Second, func(ctx context.Context, t *testing.T, s string, g Grid) {
		if _, err := solveWith(ctx, g, 2, false); err != nil {
			t.Skipf("%q over budget: %v", s, err)
		}
		checkEnginesAgree(t, s, g)
	})
}

// TestKernels checks the assembly kernels against their Go versions on
// random pattern words (the search reaches only some of them): forced
// patterns and tallies, permutation counts and the choice of pick.
func TestKernels(t *testing.T) {
	if !asmEngine {
		t.Skip("assembly engine not built (amd64 without the purego tag) or not run by this CPU (BMI1, BMI2, AVX2)")
	}
	rng := rand.New(rand.NewPCG(39, 1))
	for i := 0; i < 20000; i++ {
		var p patterns
		for d := range p {
			// Dense words most of the time, so that tallies reach three
			// and four and most patterns keep a permutation.
			x := rng.Uint64() | rng.Uint64()
			if i%4 == 0 {
				x &= rng.Uint64()
			}
			p[d] = x & (bandAll * halves)
		}
		var fg, fa [9]uint64
		og, ug, tg, okg := p.forcedAll(&fg)
		oa, ua, ta, oka := forcedAllAsm(&p, &fa)
		if okg != oka || okg && (og != oa || ug != ua || tg != ta || fg != fa) {
			t.Fatalf("forcedAll(%#x): Go %#x %#x %#x %v %#x, assembly %#x %#x %#x %v %#x", p, og, ug, tg, okg, fg, oa, ua, ta, oka, fa)
		}
		var cg, ca [9]uint64
		if tg, ta := p.permCounts(&cg), permCountsAsm(&p, &ca); tg != ta || cg != ca {
			t.Fatalf("permCounts(%#x): Go %#x %#x, assembly %#x %#x", p, tg, cg, ta, ca)
		}
		dg, ig, vg, okg := p.pick()
		da, ia, va, oka := p.pickCounts()
		if dg != da || ig != ia || vg != va || okg != oka {
			t.Fatalf("pick(%#x) = %d %d %#x %v, pickCounts = %d %d %#x %v", p, dg, ig, vg, okg, da, ia, va, oka)
		}
	}
}
