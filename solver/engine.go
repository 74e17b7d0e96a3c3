package solver

import (
	"context"
	"math/bits"
)

// The engine keeps the candidates as band bitboards: for every digit d
// (0-8) and band b (0-2, three rows each) one 27-bit mask, bit 9*r+c set
// when the digit may still go in row r of the band, column c. Cell i of the
// grid is bit i%27 of band i/27.
//
// Propagation is per digit and exact for that digit within every band and
// every stack: in a band a digit fills one cell per row and one per box, so
// its rows map one-to-one onto the band's boxes; only the row/box "triads"
// that lie on such a permutation survive (this is box/line reduction in both
// directions and hidden singles in rows and boxes). The same argument over
// bands and the columns of a stack gives the column side. Both are one
// lookup in a 512-entry table. Cells come in through naked singles, found
// for a whole band at once with bit accumulators. Across digits, the three
// cells of a row or column within a box take three different digits; that
// pass (minilines) also leaves each digit's row-to-box and band-to-column
// patterns, and the search guesses on them: in the band or stack with the
// fewest permutations left, the digit with the fewest, one branch per
// permutation (as tdoku does; see RESULTS.md). A guess copies the whole
// state (27 words and 3 more); there is no undo log.

const (
	bandAll = 1<<27 - 1
	// checkEvery is how many guesses pass between two looks at ctx.
	checkEvery = 128
)

// state is the whole search state: 192 bytes, copied on a guess.
type state struct {
	cand     [3][9]uint32 // by band, then digit
	unsolved [3]uint32    // cells of each band without a placed digit
	pat      patterns     // each digit's patterns as its last closure left them
}

// Tables built once at start-up and never written after.
var tab = buildTables()

type tables struct {
	triad      [512]uint8      // 9 cells of a row -> 3 bits: boxes with a candidate
	perm       [512]uint16     // 3x3 pattern -> cells that lie on a permutation
	bandKeep   [512]uint32     // row/box triad pattern -> 27-bit mask it keeps
	colExpand  [512]uint32     // 9 columns -> 27-bit mask of those columns
	single     [512]uint16     // 9 cells of a row -> the cell if it is alone
	peers      [27]uint32      // row and box of a cell in its band, minus the cell
	forceClear [512]uint32     // minirows of a band -> the rest of their rows and boxes
	miniCells  [512]uint32     // minirows of a band -> their cells
	nperm      [512]uint8      // 3x3 pattern -> how many permutations lie on it
	colMask    [27]uint32      // a cell of a band -> the 27-bit mask of its column
	permKeep   [6][6][3]uint32 // band (0-2) or stack (3-5), permutation -> patternMask
}

func buildTables() *tables {
	t := new(tables)
	for x := 0; x < 512; x++ {
		for k := 0; k < 3; k++ {
			if x>>(3*k)&7 != 0 {
				t.triad[x] |= 1 << k
			}
		}
		if x&(x-1) == 0 {
			t.single[x] = uint16(x)
		}
		for c := 0; c < 9; c++ {
			if x>>c&1 != 0 {
				t.colExpand[x] |= 1<<c | 1<<(c+9) | 1<<(c+18)
			}
		}
		// Six permutations of rows onto boxes (or bands onto columns).
		var keep uint16
		for _, p := range [6][3]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}} {
			m := 1<<(0*3+p[0]) | 1<<(1*3+p[1]) | 1<<(2*3+p[2])
			if x&m == m {
				keep |= uint16(m)
				t.nperm[x]++
			}
		}
		t.perm[x] = keep
		for i := 0; i < 9; i++ {
			if x>>i&1 != 0 {
				r, k := i/3, i%3
				mini := uint32(7) << (9*r + 3*k)
				t.miniCells[x] |= mini
				t.forceClear[x] |= (511<<(9*r) | 0x1C0E07<<(3*k)) &^ mini
			}
		}
		for i := 0; i < 9; i++ {
			if keep>>i&1 != 0 {
				r, k := i/3, i%3
				t.bandKeep[x] |= 7 << (9*r + 3*k)
			}
		}
	}
	for pos := 0; pos < 27; pos++ {
		r, c := pos/9, pos%9
		var m uint32
		for q := 0; q < 27; q++ {
			if q/9 == r || q%9/3 == c/3 {
				m |= 1 << q
			}
		}
		t.peers[pos] = m &^ (1 << pos)
		t.colMask[pos] = t.colExpand[1<<c]
	}
	for i := range t.permKeep {
		for k, m := range permMasks {
			t.permKeep[i][k] = patternMask(t, i, m)
		}
	}
	return t
}

// closeDigit applies band and stack closure to digit d until nothing
// changes, then takes the cells each digit now holds alone in a row out of
// play for the other digits. It reports false on a contradiction, and
// returns the other digits that lost candidates.
func (s *state) closeDigit(d int) (lost uint32, ok bool) {
	t := tab
	a0, a1, a2 := s.cand[0][d], s.cand[1][d], s.cand[2][d]
	for {
		x0 := uint(t.triad[a0&511]) | uint(t.triad[a0>>9&511])<<3 | uint(t.triad[a0>>18&511])<<6
		n0 := a0 & t.bandKeep[x0&511]
		x1 := uint(t.triad[a1&511]) | uint(t.triad[a1>>9&511])<<3 | uint(t.triad[a1>>18&511])<<6
		n1 := a1 & t.bandKeep[x1&511]
		x2 := uint(t.triad[a2&511]) | uint(t.triad[a2>>9&511])<<3 | uint(t.triad[a2>>18&511])<<6
		n2 := a2 & t.bandKeep[x2&511]
		// The minirows kept: the band closure's own output, read here so
		// that x0-x2 need not live across the stack closure.
		h := uint32(t.perm[x0&511]) | uint32(t.perm[x1&511])<<9 | uint32(t.perm[x2&511])<<18
		c0 := (n0 | n0>>9 | n0>>18) & 511
		c1 := (n1 | n1>>9 | n1>>18) & 511
		c2 := (n2 | n2>>9 | n2>>18) & 511
		// Stacks: rows of the pattern are bands, columns are the stack's columns.
		v0 := c0&7 | (c1&7)<<3 | (c2&7)<<6
		v1 := c0>>3&7 | (c1>>3&7)<<3 | (c2>>3&7)<<6
		v2 := c0>>6 | (c1>>6)<<3 | (c2>>6)<<6
		p0, p1, p2 := t.perm[v0], t.perm[v1], t.perm[v2]
		// A band left empty by its closure empties every stack pattern.
		if p0 == 0 || p1 == 0 || p2 == 0 {
			return 0, false
		}
		k0 := uint32(p0&7) | uint32(p1&7)<<3 | uint32(p2&7)<<6
		k1 := uint32(p0>>3&7) | uint32(p1>>3&7)<<3 | uint32(p2>>3&7)<<6
		k2 := uint32(p0>>6) | uint32(p1>>6)<<3 | uint32(p2>>6)<<6
		a0, a1, a2 = n0&t.colExpand[k0], n1&t.colExpand[k1], n2&t.colExpand[k2]
		// Band closure is idempotent: only a change made by the stacks
		// can give it more to do.
		if a0 == n0 && a1 == n1 && a2 == n2 {
			// The closed digit's minirows and minicolumns (the stack
			// closure kept every one), for minilines and pick.
			s.pat[d] = uint64(h) | (uint64(p0)|uint64(p1)<<9|uint64(p2)<<18)<<32
			break
		}
	}
	s.cand[0][d], s.cand[1][d], s.cand[2][d] = a0, a1, a2
	// Hidden singles: a row of a band where the digit has one cell left.
	p0 := rowSingles(a0) & s.unsolved[0]
	p1 := rowSingles(a1) & s.unsolved[1]
	p2 := rowSingles(a2) & s.unsolved[2]
	if p0|p1|p2 == 0 {
		return 0, true
	}
	lost = s.claim(d, 0, p0) | s.claim(d, 1, p1) | s.claim(d, 2, p2)
	return lost &^ (1 << d), true
}

// rowSingles returns the cells of a band mask that are alone in their row.
func rowSingles(a uint32) uint32 {
	t := tab
	return uint32(t.single[a&511]) | uint32(t.single[a>>9&511])<<9 | uint32(t.single[a>>18&511])<<18
}

// claim gives the cells p of band b to digit d: they leave s.unsolved and
// every other digit, without a branch per digit. It returns the digits that
// lost something: those with m&p != 0, that is where m&p + 2^27-1 carries
// into bit 27.
func (s *state) claim(d, b int, p uint32) (lost uint32) {
	if p == 0 {
		return 0
	}
	s.unsolved[b] &^= p
	band := &s.cand[b]
	for e := 8; e >= 0; e-- {
		m := band[e]
		band[e] = m &^ p
		lost = lost<<1 | (m&p+bandAll)>>27
	}
	band[d] |= p
	return lost
}

// patterns are, for each digit, the minirows (bit 9*band+3*row+box) and,
// from bit 32, the minicolumns (bit 9*stack+3*band+column) that hold it:
// the 3x3 patterns of each band and of each stack. closeDigit writes them;
// at a fixpoint of propagate every digit was closed after its last change,
// so they describe the state.
type patterns [9]uint64

// nakedSingles places the cells with one candidate left, found in all
// three bands before any is placed: the digit leaves the cell's row, box
// and column. It returns the digits that lost candidates, and false when a
// cell has none.
func (s *state) nakedSingles() (changed uint32, ok bool) {
	t := tab
	// Bands 0 and 1 in the halves of one word, band 2 in another.
	var once01, twice01 uint64
	var once2, twice2 uint32
	for d := 0; d < 9; d++ {
		m01 := uint64(s.cand[0][d]) | uint64(s.cand[1][d])<<32
		m2 := s.cand[2][d]
		twice01 |= once01 & m01
		once01 |= m01
		twice2 |= once2 & m2
		once2 |= m2
	}
	if once01 != bandAll*halves || once2 != bandAll {
		return 0, false
	}
	singles := [3]uint32{uint32(once01 &^ twice01), uint32((once01 &^ twice01) >> 32), once2 &^ twice2}
	for b := range s.cand {
		naked := singles[b] & s.unsolved[b]
		if naked == 0 {
			continue
		}
		s.unsolved[b] &^= naked
		for d, a := range &s.cand[b] {
			n := a & naked
			if n == 0 {
				continue
			}
			changed |= 1 << d
			var cols uint32
			for m := n; m != 0; m &= m - 1 {
				pos := bits.TrailingZeros32(m)
				a &^= t.peers[pos]
				cols |= t.colMask[pos]
			}
			s.cand[b][d] = a
			for o := 0; o < 3; o++ {
				if o != b {
					s.cand[o][d] &^= cols
				}
			}
		}
	}
	return changed, true
}

// closeAndPlace closes the changed digits (a 9-bit set) in waves, each
// followed by naked singles: a digit that loses candidates while it waits
// in the current wave is closed once, after the losses; the others, and
// the digits naked singles reach, make the next wave, until a wave and its
// naked singles change nothing. It reports false on a contradiction.
func (s *state) closeAndPlace(changed uint32) bool {
	for {
		cur := changed
		changed = 0
		for cur != 0 {
			d := bits.TrailingZeros32(cur)
			cur &= cur - 1
			lost, ok := s.closeDigit(d)
			if !ok {
				return false
			}
			changed |= lost &^ cur
		}
		placed, ok := s.nakedSingles()
		if !ok {
			return false
		}
		changed |= placed
		if changed == 0 {
			return true
		}
	}
}

// propagate runs closure on the changed digits (a 9-bit set), naked
// singles and minilines until nothing changes, closing and placing in
// assembly when asm is true. It reports false on a contradiction.
func (s *state) propagate(changed uint32, asm bool) bool {
	for {
		// asmEngine is a constant false where the assembly is not
		// built, which takes the branch out.
		var ok bool
		if asmEngine && asm {
			ok = closeAndPlaceAsm(s, changed, tab)
		} else {
			ok = s.closeAndPlace(changed)
		}
		if !ok {
			return false
		}
		if s.unsolved[0]|s.unsolved[1]|s.unsolved[2] == 0 {
			return true // solved: nothing left to pick
		}
		if changed, ok = s.minilines(asm); !ok {
			return false
		}
		if changed == 0 {
			return true
		}
	}
}

// Masks over 27 bits seen as nine 3-bit groups (g0: each group's first
// bit) or as three 9-bit bands of three 3-bit rows (r0: each band's first
// row), in both 32-bit halves of a pattern word.
const (
	halves = 1 | 1<<32
	g0     = 0o111111111 * halves
	g1     = g0 << 1
	g2     = g0 << 2
	r0     = (0o000000007 | 0o000007000 | 0o007000000) * halves
	r1     = r0 << 3
	r2     = r0 << 6
)

// othersInGroup returns, for each bit, whether another bit of its 3-bit
// group is set.
func othersInGroup(x uint64) uint64 {
	return (x>>1)&(g0|g1) | (x<<2)&g2 | (x>>2)&g0 | (x<<1)&(g1|g2)
}

// forced returns, of a digit's minirows and minicolumns, those it must
// take: alone in their row (group) or in their box (the same position in
// the band's other rows); for minicolumns, alone in their box or in their
// column over the bands.
func forced(x uint64) uint64 {
	boxOthers := (x>>3)&(r0|r1) | (x<<6)&r2 | (x>>6)&r0 | (x<<3)&(r1|r2)
	return x &^ (othersInGroup(x) & boxOthers)
}

// transpose swaps, in a 27-bit word of nine 3-bit groups, group 3i+j with
// group 3j+i: it turns minicolumns by stack and band into minicolumns by
// band and stack (bit 9b+c, as a band's column c), and back.
func transpose(x uint32) uint32 {
	const (
		diag = 7 | 7<<12 | 7<<24
		by6  = 7<<3 | 7<<15
		by12 = 7 << 6
	)
	return x&diag | (x&by6)<<6 | (x>>6)&by6 | (x&by12)<<12 | (x>>12)&by12
}

// A tally counts, bit by bit, how many of the words added have the bit:
// at least once, twice, three and four times.
type tally struct{ ge1, ge2, ge3, ge4 uint64 }

func (t *tally) add(x uint64) {
	t.ge4 |= t.ge3 & x
	t.ge3 |= t.ge2 & x
	t.ge2 |= t.ge1 & x
	t.ge1 |= x
}

// forcedAll sets f to each digit's forced minirows and minicolumns and
// returns the minilines only three digits can take (only), those three
// digits must take (full), and the digits holding one of them not forced
// for the digit (todo): those minilines acts on. ok is false when a
// miniline has fewer than three digits or more than three must take it.
func (p *patterns) forcedAll(f *[9]uint64) (only, full uint64, todo uint32, ok bool) {
	var n, fn tally
	for d, x := range p {
		n.add(x)
		f[d] = forced(x)
		fn.add(f[d])
	}
	if n.ge3 != bandAll*halves || fn.ge4 != 0 {
		return 0, 0, 0, false
	}
	only, full = n.ge3&^n.ge4, fn.ge3
	for d, x := range p {
		if x&(only|full)&^f[d] != 0 {
			todo |= 1 << d
		}
	}
	return only, full, todo, true
}

// minilines applies what the digits do together in the three cells of a
// row within a box (a minirow) or of a column within a box (a minicolumn):
// they hold three different digits, so when only three digits can go there
// all three must, and when three digits must go there no other can. It
// returns the digits that lost candidates, or false on a contradiction.
//
// A digit's pattern word (see patterns) has bit 9b+3r+k when minirow (row
// r, box k) of band b holds it and bit 32+9s+3b+c when column c of stack s
// does in band b: the two halves have the same shape, a box's minirows or
// minicolumns are a 3-bit group, so one pass of bit operations serves
// both. The counts over the digits are kept bit-sliced.
func (s *state) minilines(asm bool) (changed uint32, ok bool) {
	t := tab
	var f [9]uint64
	var only, full uint64
	var todo uint32
	if asmEngine && asm {
		only, full, todo, ok = forcedAllAsm(&s.pat, &f)
	} else {
		only, full, todo, ok = s.pat.forcedAll(&f)
	}
	if !ok {
		return 0, false
	}
	for todo != 0 {
		d := bits.TrailingZeros32(todo)
		todo &= todo - 1
		x := s.pat[d]
		force, out := x&only&^f[d], x&full&^f[d]
		hForce, hOut := uint32(force), uint32(out)
		// A column forced in band b takes the stack's other columns of
		// band b and the same column of the other bands.
		vForce, vOut := transpose(uint32(force>>32)), transpose(uint32(out>>32))
		vAll := (vForce | vForce>>9 | vForce>>18) & 511
		for b := 0; b < 3; b++ {
			fb := vForce >> (9 * b) & 511
			cols := (fb|uint32(othersInGroup(uint64(fb))))&^fb | vAll&^fb | vOut>>(9*b)&511
			clear := t.forceClear[hForce>>(9*b)&511] | t.miniCells[hOut>>(9*b)&511] | t.colExpand[cols]
			if s.cand[b][d]&clear != 0 {
				s.cand[b][d] &^= clear
				changed |= 1 << d
			}
		}
	}
	return changed, true
}

// search is one solve: the limit, what was found, and the budget.
type search struct {
	// ctx is the budget. The search asks ctx.Err, an atomic load, rather
	// than selecting on ctx.Done, whose channel a cancelable context makes
	// on first use: an allocation per solve, and deep enough in the
	// runtime to grow the stack of the goroutine that solves. nil never
	// ends.
	ctx     context.Context
	limit   int
	count   int
	guesses int
	stopped bool
	asm     bool // propagation and pick's counts run in assembly (close_amd64.s)
	sol     Grid
}

func (sr *search) finished() bool { return sr.count >= sr.limit || sr.stopped }

// budgetOver reports whether the budget has ended, and records it.
func (sr *search) budgetOver() bool {
	if sr.ctx.Err() != nil {
		sr.stopped = true
	}
	return sr.stopped
}

// run propagates s, records a solution or guesses, and recurses.
func (sr *search) run(s *state, changed uint32) {
	for {
		if !s.propagate(changed, sr.asm) {
			return
		}
		if s.unsolved[0]|s.unsolved[1]|s.unsolved[2] == 0 {
			sr.record(s)
			return
		}
		sr.guesses++
		if sr.ctx != nil && sr.guesses%checkEvery == 0 && sr.budgetOver() {
			return
		}
		var d, i int
		var v uint16
		var ok bool
		if asmEngine && sr.asm {
			d, i, v, ok = s.pat.pickCounts()
		} else {
			d, i, v, ok = s.pat.pick()
		}
		if ok {
			// Try every permutation but the last on a copy; the last
			// one is what remains in s once the others are ruled out.
			keep := &tab.permKeep[i]
			last := -1
			for k, m := range permMasks {
				if v&m != m {
					continue
				}
				if last >= 0 {
					sr.guessMask(s, d, &keep[last])
					if sr.finished() {
						return
					}
				}
				last = k
			}
			s.restrict(d, &keep[last])
			changed = 1 << d
			continue
		}
		b, pos := s.pickFewest()
		bit := uint32(1) << pos
		var digits uint32
		for d := 0; d < 9; d++ {
			if s.cand[b][d]&bit != 0 {
				digits |= 1 << d
			}
		}
		// Try every candidate but the last on a copy; the last one is
		// what remains in s once the others are ruled out.
		changed = 0
		for bits.OnesCount32(digits) > 1 {
			d := bits.TrailingZeros32(digits)
			digits &= digits - 1
			sr.guess(s, d, b, bit)
			if sr.finished() {
				return
			}
			s.cand[b][d] &^= bit
			changed |= 1 << d
		}
		// One digit left: the naked single step places it.
	}
}

// guess searches a copy of s with digit d in the cell bit of band b. It is
// a function of its own so that the copy stays on the stack: taken inside
// run's loop, its address would make escape analysis move it to the heap.
func (sr *search) guess(s *state, d, b int, bit uint32) {
	child := *s
	sr.run(&child, child.place(d, b, bit))
}

// guessMask searches a copy of s with digit d's candidates cut to m.
func (sr *search) guessMask(s *state, d int, m *[3]uint32) {
	child := *s
	child.restrict(d, m)
	sr.run(&child, 1<<d)
}

// restrict keeps only the candidates of digit d in m.
func (s *state) restrict(d int, m *[3]uint32) {
	s.cand[0][d] &= m[0]
	s.cand[1][d] &= m[1]
	s.cand[2][d] &= m[2]
}

// permMasks are the six permutations of three rows onto three boxes as
// 3x3 patterns (bit 3*row+box).
var permMasks = [6]uint16{
	1<<0 | 1<<4 | 1<<8, 1<<0 | 1<<5 | 1<<7, 1<<1 | 1<<3 | 1<<8,
	1<<1 | 1<<5 | 1<<6, 1<<2 | 1<<3 | 1<<7, 1<<2 | 1<<4 | 1<<6,
}

// patternMask returns the masks that keep, for one digit, only the cells of
// permutation m in band i (0-2) or stack i-3 (3-5); t.permKeep holds them
// for every band, stack and permutation.
func patternMask(t *tables, i int, m uint16) (x [3]uint32) {
	x = [3]uint32{bandAll, bandAll, bandAll}
	if i < 3 {
		x[i] = t.bandKeep[m&511]
		return x
	}
	st := 3 * uint(i-3)
	stack := t.colExpand[7<<st]
	for b := 0; b < 3; b++ {
		x[b] = ^stack | t.colExpand[uint32(m>>(3*b)&7)<<st&511]
	}
	return x
}

// pick chooses what to guess on: the band or stack with the fewest
// row-to-box (band-to-column) permutations left over all digits, not yet
// down to one for every digit, and in it the digit with the fewest, at
// least two. It returns the digit, the band (0-2) or stack (3-5) and the
// digit's 3x3 pattern there; ok is false when every digit of every band
// and stack is down to one permutation.
func (p *patterns) pick() (d, i int, v uint16, ok bool) {
	t := tab
	var tot [6]int
	for e := 0; e < 9; e++ {
		h, v := p[e], p[e]>>32
		tot[0] += int(t.nperm[h&511])
		tot[1] += int(t.nperm[h>>9&511])
		tot[2] += int(t.nperm[h>>18&511])
		tot[3] += int(t.nperm[v&511])
		tot[4] += int(t.nperm[v>>9&511])
		tot[5] += int(t.nperm[v>>18&511])
	}
	best, bestTot := -1, 1<<30
	for j, n := range tot {
		if n > 9 && n < bestTot {
			best, bestTot = j, n
		}
	}
	if best < 0 {
		return 0, 0, 0, false
	}
	bestN := 7
	sh := 9*uint(best) + 5*uint(best/3) // bands from bit 0, stacks from 32
	for e := 0; e < 9; e++ {
		x := uint16(p[e] >> sh & 511)
		if n := int(t.nperm[x]); n >= 2 && n < bestN {
			d, bestN, v = e, n, x
		}
	}
	return d, best, v, true
}

// unitShift is where each band's (0-2) and stack's (3-5) pattern starts in
// a digit's pattern word.
var unitShift = [6]uint{0, 9, 18, 32, 41, 50}

// permCounts sets c[d] to, at each of digit d's six patterns' first bit,
// how many permutations lie on it, and returns their sum over the digits
// (at most 54 a pattern: six bits of nine).
func (p *patterns) permCounts(c *[9]uint64) (tot uint64) {
	t := tab
	for d, x := range p {
		var n uint64
		for _, sh := range unitShift {
			n |= uint64(t.nperm[x>>sh&511]) << sh
		}
		c[d] = n
		tot += n
	}
	return tot
}

// pickCounts is pick with the permutation counts from permCountsAsm: the
// same choice, for the assembly engine.
func (p *patterns) pickCounts() (d, i int, v uint16, ok bool) {
	var c [9]uint64
	tot := permCountsAsm(p, &c)
	// The unit with the fewest permutations above 9, the lowest on a tie
	// (as pick): the least of the keys total<<3 | unit, where a total of
	// 9 or less gets a key above every other. min compiles without
	// branches.
	const none = 1 << 20
	key := func(n, j uint64) uint64 {
		if n <= 9 {
			return none
		}
		return n<<3 | j
	}
	k := min(key(tot&63, 0), key(tot>>9&63, 1), key(tot>>18&63, 2),
		key(tot>>32&63, 3), key(tot>>41&63, 4), key(tot>>50&63, 5))
	if k == none {
		return 0, 0, 0, false
	}
	best := int(k & 7)
	sh := unitShift[best] & 63 // the mask spares Go's check of the shift
	// In it the digit with the fewest permutations, at least two, the
	// lowest on a tie: the least of n<<4 | digit.
	digitKey := func(x uint64, e uint64) uint64 {
		n := x >> sh & 7
		if n < 2 {
			return none
		}
		return n<<4 | e
	}
	k = min(digitKey(c[0], 0), digitKey(c[1], 1), digitKey(c[2], 2), digitKey(c[3], 3),
		digitKey(c[4], 4), digitKey(c[5], 5), digitKey(c[6], 6), digitKey(c[7], 7), digitKey(c[8], 8))
	d = int(k & 15)
	return d, best, uint16(p[d] >> sh & 511), true
}

// place keeps only digit d in the cell bit of band b and returns the digits
// that lost it; the naked single step does the rest.
func (s *state) place(d, b int, bit uint32) (changed uint32) {
	for e := 0; e < 9; e++ {
		if e != d && s.cand[b][e]&bit != 0 {
			s.cand[b][e] &^= bit
			changed |= 1 << e
		}
	}
	return changed
}

// pickFewest returns the first unsolved cell with the fewest candidates.
// It is the fallback of pick, which finds a pattern to guess on in every
// state the propagation leaves unsolved.
func (s *state) pickFewest() (b, pos int) {
	best, bestN := 0, 10
	for i := 0; i < 81; i++ {
		b, pos := i/27, i%27
		if s.unsolved[b]>>pos&1 == 0 {
			continue
		}
		n := 0
		for d := 0; d < 9; d++ {
			n += int(s.cand[b][d] >> pos & 1)
		}
		if n < bestN {
			best, bestN = i, n
		}
	}
	return best / 27, best % 27
}

func (sr *search) record(s *state) {
	sr.count++
	if sr.count > 1 {
		return
	}
	for d := 0; d < 9; d++ {
		for b := 0; b < 3; b++ {
			for m := s.cand[b][d]; m != 0; m &= m - 1 {
				sr.sol[27*b+bits.TrailingZeros32(m)] = uint8(d + 1)
			}
		}
	}
}

func solve(ctx context.Context, g Grid, limit int) (Result, error) {
	return solveWith(ctx, g, limit, asmEngine)
}

// solveWith is solve on the assembly engine when asm is true (only where it
// is built and the CPU runs it), else on the scalar one; the tests run both.
func solveWith(ctx context.Context, g Grid, limit int, asm bool) (Result, error) {
	sr := search{ctx: ctx, limit: max(limit, 1), asm: asm}
	sr.start(g)
	res := Result{Count: sr.count}
	if sr.count > 0 {
		res.Solution = sr.sol
	}
	if sr.stopped {
		return res, ErrBudget
	}
	return res, nil
}

// start sets up the state for g (see givens) and searches it.
func (sr *search) start(g Grid) {
	var s state
	if !s.givens(&g) {
		return
	}
	sr.run(&s, 1<<9-1)
}

// givens sets s up for g: givens go in the way naked singles do (the digit
// leaves the cell's row, box and column), all at once: each digit keeps the
// cells of its givens and loses the cells of the other givens and every
// peer of its own, so the first propagation starts from their
// consequences. It reports false when g has no solution on its face: a
// cell not 0-9, or two givens of a digit in one row, column or box.
func (s *state) givens(g *Grid) bool {
	t := tab
	var own, clear [9][3]uint32 // each digit's givens, and their rows, boxes and columns
	var given [3]uint32
	for i, v := range g {
		if v == 0 {
			continue
		}
		if v > 9 {
			return false
		}
		d, b, pos := int(v-1), i/27, i%27
		bit := uint32(1) << pos
		c := &clear[d]
		if c[b]&bit != 0 {
			return false // an earlier given of the digit sees this cell
		}
		given[b] |= bit
		own[d][b] |= bit
		col := t.colMask[pos]
		c[0] |= col
		c[1] |= col
		c[2] |= col
		c[b] |= t.peers[pos]
	}
	for b := range s.cand {
		for d := range s.cand[b] {
			s.cand[b][d] = bandAll&^(clear[d][b]|given[b]) | own[d][b]
		}
		s.unsolved[b] = bandAll &^ given[b]
	}
	return true
}
